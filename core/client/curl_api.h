// libcurl, loaded when the first request is made (dlopen of libcurl.so.4) rather than linked: libcurl pulls
// in ~25 libraries (gnutls, krb5, ldap, nghttp2, ...) that every `air` start would otherwise map and relocate,
// also `air --version`, a dry-run and each TAB of shell completion (issue 28; bench/cli_startup.sh).
#pragma once
#define CURL_DISABLE_TYPECHECK 1  // the type-checking macros would name the linked functions
#include <curl/curl.h>

namespace air {

// The libcurl functions the client calls, resolved from the loaded library. The variadic ones are called
// through pointers of their own variadic type, which is the ABI they were compiled with.
struct CurlApi {
  CURLcode (*global_init)(long);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// Loads libcurl once (thread-safe) and calls curl_global_init; throws air::Error when it cannot be loaded.
const CurlApi& curl();

}  // namespace air
