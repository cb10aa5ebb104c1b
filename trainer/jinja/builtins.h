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

// The Python methods the engine implements (kOther: any other name), in find_method's order.
enum class Method {
  k_append, k_capitalize, k_clear, k_copy, k_count, k_cycle, k_endswith, k_extend, k_find, k_get, k_index, k_insert, k_isalnum, k_isalpha, k_isdigit, k_islower, k_isspace, k_isupper, k_items, k_join, k_keys, k_lower, k_lstrip, k_pop, k_remove, k_replace, k_reverse, k_rfind, k_rindex, k_rsplit, k_rstrip, k_sort, k_split, k_splitlines, k_startswith, k_strip, k_title, k_upper, k_values,
  kOther,
};

// -1 when jinja2 has no such filter / test.
int find_filter(std::string_view name);
int find_test(std::string_view name);
// Filters jinja2 has that this engine does not implement (an Error kUnsupported where a template uses one).
bool filter_unsupported(Filter f);
int find_global(std::string_view name);
int find_method(std::string_view name);  // a Method

}  // namespace air::jinja
