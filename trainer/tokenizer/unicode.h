// Small UTF-8 helpers for the tokenizer: Unicode White_Space, character boundaries, and the lossy UTF-8
// repair Hugging Face applies to decoded bytes (Rust's String::from_utf8_lossy).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace air::train {

// Unicode White_Space (Rust's char::is_whitespace, Oniguruma's \s on UTF-8).
bool is_white_space(char32_t c);

// Decodes the character at byte offset i and advances i; a malformed byte yields U+FFFD and advances 1.
char32_t next_utf8_char(std::string_view s, size_t& i);

// Byte offset where the character that ends at `end` starts (end > 0).
size_t prev_utf8_char_start(std::string_view s, size_t end);

// Replaces each maximal invalid UTF-8 subsequence by U+FFFD, like Rust's from_utf8_lossy.
std::string utf8_lossy(std::string_view bytes);

}  // namespace air::train
