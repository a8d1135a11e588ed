#include "tools/wombatkv/output.h"

#include <cerrno>
#include <cstdio>
#include <exception>

#include "env/errno_status.h"
#include "tools/wombatkv/exit_codes.h"

namespace wombatkv::cli {

std::string DumpJson(const nlohmann::json& doc) {
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Counted(uint64_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

std::string Base64(ByteView in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t{in[i]} << 16;
    if (i + 1 < in.size()) v |= uint32_t{in[i + 1]} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

void Output::Line(std::string_view text) {
  if (json_) return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

void Output::Note(std::string_view text) {
  if (json_ || quiet_) return;
  std::fprintf(stderr, "%.*s\n", static_cast<int>(text.size()), text.data());
}

void Output::Warn(std::string_view text) {
  if (json_ && quiet_) return;
  std::fprintf(stderr, "%s: warning: %.*s\n", program_.c_str(), static_cast<int>(text.size()),
               text.data());
}

void Output::Json(const nlohmann::json& doc) {
  std::string text = DumpJson(doc);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

void Output::Table(const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& rows) {
  if (json_) return;
  std::vector<size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  if (!quiet_) measure(header);
  for (const auto& row : rows) measure(row);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    Line(line);
  };
  if (!quiet_) print(header);
  for (const auto& row : rows) print(row);
}

Status Output::Raw(ByteView bytes) {
  if ((!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) ||
      std::fflush(stdout) != 0) {
    return Status::FailedPrecondition("cannot write to stdout: " + ErrnoText(errno));
  }
  return Status::Ok();
}

int Output::Error(std::string_view what, const Status& status, std::string_view hint,
                  const nlohmann::json& extra) {
  if (hint.empty()) hint = DefaultHint(status.code(), remote_);
  const int exit_code = ExitCodeFor(status.code());
  if (json_) {
    nlohmann::json err = {{"code", std::string(CodeName(status.code()))},
                          {"exit", exit_code},
                          {"what", std::string(what)},
                          {"message", status.message()},
                          {"hint", std::string(hint)}};
    if (extra.is_object()) err.update(extra);
    std::string text = DumpJson({{"error", err}});
    std::fprintf(stderr, "%s\n", text.c_str());
  } else {
    std::string why(CodeWords(status.code()));
    if (!status.message().empty()) why += ": " + status.message();
    std::fprintf(stderr, "%s: %.*s: %s; %.*s\n", program_.c_str(), static_cast<int>(what.size()),
                 what.data(), why.c_str(), static_cast<int>(hint.size()), hint.data());
  }
  return exit_code;
}

int Output::Usage(std::string_view what, std::string_view why, std::string_view hint) {
  return Error(what, Status::InvalidArgument(std::string(why)), hint);
}

bool ArgvHasJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--json") return true;
  }
  return false;
}

int RunMain(const char* program, int (*main)(int, char**), int argc, char** argv) {
  try {
    const int code = main(argc, argv);
    // What a command printed may still sit in stdout's buffer: a write that fails there (a full
    // disk, a closed pipe) must not exit 0 with the output lost. A failed command said why
    // already (a Raw write's failure among them).
    if (code != kExitOk) return code;
    const bool flush_failed = std::fflush(stdout) != 0;
    const int err = errno;
    if (!flush_failed && !std::ferror(stdout)) return code;
    Output out;
    out.SetProgram(program);
    out.Configure(ArgvHasJson(argc, argv), /*quiet=*/false);
    return out.Error(
        "stdout",
        Status::FailedPrecondition("cannot write to stdout: " +
                                   (flush_failed ? ErrnoText(err) : std::string("a write failed"))),
        "free space where the output goes");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s; this is a bug: please report it\n", program,
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: internal error: unknown exception; this is a bug\n", program);
  }
  return kExitInternal;
}

}  // namespace wombatkv::cli
