// bench/chat_data.sh: render + tokenize + mask of a conversation corpus on all cores (air_data's
// load_examples_into, exactly what air-train's cache writer runs before training, the examples counted and
// dropped instead of written), streaming: any N fits in memory.
//   chat_data_bench TOKENIZER_DIR MESSAGES.jsonl [THREADS] [TRAIN_ON | render]
// (train_on all: one render, no prefix renders; render: the trained spans only, no tokenizer)
// Prints one line: conversations, renders, tokens, seconds, conversations/s.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <sstream>

#include "trainer/data/dataset.h"
#include "trainer/data/parallel.h"
#include "trainer/data/record_stream.h"
#include "trainer/tokenizer/tokenizer.h"

using namespace air::train;

namespace {

// CPU seconds of the whole process (every thread) so far: under load, work per CPU second is steadier than
// wall time.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

long peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: chat_data_bench TOKENIZER_DIR MESSAGES.jsonl [THREADS]\n";
    return 2;
  }
  try {
    const std::string dir = argv[1];
    auto tok = std::make_shared<const Tokenizer>(Tokenizer::from_file(dir + "/tokenizer.json"));
    auto tmpl = ChatTemplate::load(dir, "", std::string("2026-12-06"));
    if (!tmpl) throw std::runtime_error(dir + " has no chat template");
    TextEncoder enc;
    enc.tokenizer = tok;
    enc.encode = [tok](const std::string& s) { return tok->encode(s, false); };
    const std::string mode = argc > 4 ? argv[4] : "assistant";
    ExampleBuilder builder(enc, &*tmpl, parse_train_on(mode).value_or(TrainOn::kAssistant));
    DataSettings s;
    s.max_seq_len = 1 << 30;
    s.threads = argc > 3 ? std::stoi(argv[3]) : 0;
    std::ostringstream log;
    // Streams as the cache writer does (chunks of records read, built and dropped: memory stays flat at any
    // N). Reading the JSON is timed apart, by a pass that only reads: the figure compared with jinja2 is
    // render + tokenize + mask.
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    size_t read = 0;
    read_records_chunked(argv[2], {}, [&](std::vector<Record>&& chunk, double) { read += chunk.size(); });
    auto t1 = std::chrono::steady_clock::now();
    const double c1 = cpu_seconds();
    if (mode == "render") {  // the template's share: every rendering and the spans, no tokenization
      std::atomic<size_t> bytes{0};
      size_t n = 0;
      read_records_chunked(argv[2], {}, [&](std::vector<Record>&& records, double) {
        n += records.size();
        parallel_for(records.size(), [&](size_t i) { bytes += render_conversation(*tmpl, records[i], TrainOn::kAssistant).text.size(); },
                     static_cast<size_t>(s.threads), 32);
      });
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() -
                         std::chrono::duration<double>(t1 - t0).count();  // less the reading
      const double cpu = cpu_seconds() - c1 - (c1 - c0);
      std::cout << "conversations " << n << " bytes " << bytes << " render_s " << sec << " cpu_s " << cpu << " per_cpu_s "
                << static_cast<double>(n) / cpu << " per_s " << static_cast<double>(n) / sec << "\n";
      return 0;
    }
    DataStats st;
    size_t examples = 0;
    load_examples_into({argv[2]}, s, builder, log, [&](Example&&) { ++examples; }, st);
    auto t2 = std::chrono::steady_clock::now();
    const double cpu = cpu_seconds() - c1 - (c1 - c0);  // less the second reading of the JSON
    const double read_s = std::chrono::duration<double>(t1 - t0).count();
    const double all_s = std::chrono::duration<double>(t2 - t1).count();
    const double work_s = all_s - read_s;  // load_examples_into reads the file again, then renders, tokenizes, masks
    std::cout << "conversations " << examples << " tokens " << st.tokens << " trained " << st.trained_tokens << " read_s " << read_s
              << " render_tokenize_mask_s " << work_s << " cpu_s " << cpu << " per_cpu_s " << static_cast<double>(examples) / cpu
              << " per_s " << static_cast<double>(examples) / work_s << " peak_rss_mib " << peak_rss_mib() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "chat_data_bench: " << e.what() << "\n";
    return 1;
  }
}
