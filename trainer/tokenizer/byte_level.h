// The GPT-2 byte-level alphabet: each of the 256 bytes is written as one printable Unicode character,
// so byte-level BPE vocabularies are plain strings. Shared by the encoder, the decoder and the trainer.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace air::train {

// UTF-8 text of the character that stands for `byte`.
const std::string& byte_level_char(unsigned char byte);

// Maps byte-level text back to the raw bytes; nullopt when a character is not in the alphabet.
std::optional<std::string> byte_level_to_bytes(std::string_view text);

// Writes raw bytes as byte-level text.
std::string bytes_to_byte_level(std::string_view bytes);

}  // namespace air::train
