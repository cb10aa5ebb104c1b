// The Alpaca prompt and its example: the prompt masked, the response and EOS trained.
#include "trainer/data/example.h"

namespace air::train {

std::string format_prompt(const AlpacaRecord& r) {
  std::string p = "### Instruction:\n" + r.instruction + "\n\n";
  if (!r.input.empty()) p += "### Input:\n" + r.input + "\n\n";
  return p + "### Response:\n";
}

// The prompt and the response are encoded separately so the mask boundary is exact; the prompt ends in
// "\n", where the Llama 3 pre-tokenizer always splits, so this gives the ids of encoding the whole text.
Example make_example(const AlpacaRecord& r, const TextEncoder& enc) {
  Example e;
  if (enc.bos) e.ids.push_back(*enc.bos);
  auto p = enc.encode(format_prompt(r));
  e.ids.insert(e.ids.end(), p.begin(), p.end());
  e.prompt_len = static_cast<int64_t>(e.ids.size());
  auto o = enc.encode(r.output);
  e.ids.insert(e.ids.end(), o.begin(), o.end());
  e.ids.push_back(enc.eos);
  return e;
}

}  // namespace air::train
