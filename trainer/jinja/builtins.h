// The filters, tests and globals the engine implements, by id (the parser resolves names once).
#pragma once
#include <string_view>

namespace air::jinja {

enum class Filter {
  kAbs, kAttr, kBatch, kCapitalize, kCenter, kCount, kD, kDefault, kDictsort, kE, kEscape, kFirst, kFloat,
  kForceescape, kFormat, kGroupby, kIndent, kInt, kItems, kJoin, kLast, kLength, kList, kLower, kMap, kMax,
  kMin, kReject, kRejectattr, kReplace, kReverse, kRound, kSafe, kSelect, kSelectattr, kSlice, kSort,
  kString, kStriptags, kSum, kTitle, kTojson, kTrim, kTruncate, kUnique, kUpper, kUrlencode, kUrlize,
  kWordcount, kWordwrap, kXmlattr, kFilesizeformat, kPprint, kRandom,
  kCount_,
};
enum class Test {
  kBoolean, kCallable, kDefined, kDivisibleby, kEq, kEqualto, kEscaped, kEven, kFalse, kFilter, kFloat, kGe,
  kGt, kGreaterthan, kIn, kInteger, kIterable, kLe, kLower, kLt, kLessthan, kMapping, kNe, kNone, kNumber,
  kOdd, kSameas, kSequence, kString, kTest, kTrue, kUndefined, kUpper, kOpEq, kOpNe, kOpLt, kOpLe, kOpGt,
  kOpGe,
  kCount_,
};
enum class Global { kRaiseException, kStrftimeNow, kNamespace, kRange, kDict, kLipsum, kCycler, kJoiner };

// -1 when jinja2 has no such filter / test.
int find_filter(std::string_view name);
int find_test(std::string_view name);
// Filters jinja2 has that this engine does not implement (an Error kUnsupported where a template uses one).
bool filter_unsupported(Filter f);
int find_global(std::string_view name);

}  // namespace air::jinja
