// air-train-check: runs our model on token ids from a safetensors file and writes logits, loss and
// gradients (and optionally a checkpoint after one AdamW step), so scripts/gpu/check_hf.py can compare
// them with transformers. Not part of training; a measuring instrument for docs/gpu-checks.md.
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "core/error.h"
#include "trainer/checkpoint.h"
#include "trainer/llama_config.h"
#include "trainer/model.h"
#include "trainer/optim.h"
#include "trainer/safetensors.h"

using namespace air::train;

namespace {

struct Args {
  std::string model, ids, out, save, dtype = "fp32", device = "cuda";
  double step_lr = 0;
  bool recompute = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto v = [&]() -> std::string {
      if (i + 1 >= argc) throw air::usage_error(k + " needs a value");
      return argv[++i];
    };
    if (k == "--model") a.model = v();
    else if (k == "--ids") a.ids = v();
    else if (k == "--out") a.out = v();
    else if (k == "--save") a.save = v();
    else if (k == "--dtype") a.dtype = v();
    else if (k == "--device") a.device = v();
    else if (k == "--step-lr") a.step_lr = std::stod(v());
    else if (k == "--recompute") a.recompute = true;
    else throw air::usage_error("unknown argument " + k);
  }
  if (a.model.empty() || a.ids.empty() || a.out.empty())
    throw air::usage_error("usage: air-train-check --model DIR --ids IDS.safetensors --out OUT.safetensors "
                           "[--dtype fp32|bf16] [--recompute] [--step-lr LR --save DIR]");
  return a;
}

int run(const Args& a) {
  at::Device dev = a.device == "cpu" ? at::Device(at::kCPU) : at::Device(at::kCUDA, 0);
  const at::ScalarType compute = a.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  LlamaConfig cfg = load_llama_config(a.model + "/config.json");
  LlamaModel m(cfg, dev, at::kFloat);
  m.load_pretrained(a.model);
  m.set_requires_grad(true);
  Rope rope(cfg, dev);

  auto in = SafetensorsFile::open(a.ids);
  at::Tensor ids = in->get("input_ids").to(dev, at::kLong);
  at::Tensor labels = in->get("labels").to(dev, at::kLong);
  // transformers shifts labels inside the loss; our data shifts them up front.
  at::Tensor targets = at::full_like(labels, -100);
  targets.narrow(1, 0, labels.size(1) - 1).copy_(labels.narrow(1, 1, labels.size(1) - 1));
  const int64_t B = ids.size(0), T = ids.size(1);
  at::Tensor pos = at::arange(T, ids.options()).unsqueeze(0).repeat({B, 1});

  at::Tensor logits = forward_logits(m, rope, ids, pos, {}, compute, a.recompute);
  at::Tensor count = targets.ne(-100).sum().to(at::kFloat);
  at::Tensor loss = loss_sum(logits, targets) / count;
  loss.backward();

  std::vector<std::pair<std::string, at::Tensor>> out = {{"logits", logits.detach().to(at::kFloat).cpu()},
                                                         {"loss", loss.detach().cpu()}};
  const int64_t last = cfg.num_hidden_layers - 1;
  for (const auto& [name, p] : m.named_parameters()) {
    const bool wanted = name.find("model.layers.") != 0 || name.find("model.layers.0.") == 0 ||
                        name.find("model.layers." + std::to_string(last) + ".") == 0;
    if (wanted) out.emplace_back("grad." + name, p.grad().to(at::kFloat).cpu());
  }
  if (a.step_lr > 0) {
    AdamW opt(m.parameters(), AdamWOptions{}, true);
    opt.step(a.step_lr);
    at::NoGradGuard no_grad;
    out.emplace_back("logits_after", forward_logits(m, rope, ids, pos, {}, at::kFloat, false).to(at::kFloat).cpu());
    if (!a.save.empty()) {
      SaveOptions so;
      so.output_dir = a.save;
      so.dtype = at::kFloat;
      so.max_shard_bytes = 2000000000ull;  // exercises the sharded layout on a 1B model
      so.source_model_dir = a.model;
      save_checkpoint(m, so);
    }
  }
  write_safetensors(a.out, out);
  std::cout << "loss " << loss.item<double>() << " attention " << attention_kernel_name() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const air::Error& e) {
    std::cerr << "air-train-check: error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {
    std::cerr << "air-train-check: error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "air-train-check: error: " << e.what() << "\n";
    return 1;
  }
}
