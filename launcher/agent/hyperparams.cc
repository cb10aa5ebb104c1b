// Writes the hyperparameters file through a temporary file and rename, so a reader never sees half of it.
#include "launcher/agent/hyperparams.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/base/error.h"

namespace air::launcher {

void write_hyperparameters(const std::string& path, const std::string& parameters_yaml) {
  bool blank = parameters_yaml.find_first_not_of(" \t\r\n") == std::string::npos;
  std::string text = blank ? "{}\n" : parameters_yaml;
  if (text.back() != '\n') text.push_back('\n');
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error("cannot write " + path + ": " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("cannot write " + path + ": " + std::strerror(errno));
  }
}

}  // namespace air::launcher
