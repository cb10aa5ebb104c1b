// dlopen/dlsym of the libcurl functions the workspace client uses.
#include "core/client/curl_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/base/error.h"

namespace air {

namespace {

template <typename F>
void bind(void* lib, const char* name, F& out) {
  void* sym = ::dlsym(lib, name);
  if (!sym) throw Error(std::string("libcurl.so.4 lacks ") + name, "install a libcurl 7.x/8.x (Debian: libcurl4)");
  out = reinterpret_cast<F>(sym);
}

CurlApi load() {
  void* lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    throw Error(std::string("cannot load libcurl: ") + (why ? why : "unknown error"),
                "install it (Debian: apt-get install libcurl4)");
  }
  CurlApi a{};
  bind(lib, "curl_global_init", a.global_init);
  bind(lib, "curl_easy_init", a.easy_init);
  bind(lib, "curl_easy_cleanup", a.easy_cleanup);
  bind(lib, "curl_easy_reset", a.easy_reset);
  bind(lib, "curl_easy_setopt", a.easy_setopt);
  bind(lib, "curl_easy_perform", a.easy_perform);
  bind(lib, "curl_easy_getinfo", a.easy_getinfo);
  bind(lib, "curl_easy_strerror", a.easy_strerror);
  bind(lib, "curl_slist_append", a.slist_append);
  bind(lib, "curl_slist_free_all", a.slist_free_all);
  a.global_init(CURL_GLOBAL_DEFAULT);
  return a;  // the library stays loaded for the process's life
}

}  // namespace

const CurlApi& curl() {
  static std::once_flag once;
  static CurlApi api;
  std::call_once(once, [] { api = load(); });
  return api;
}

}  // namespace air
