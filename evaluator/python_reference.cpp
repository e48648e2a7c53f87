// evaluator/python_reference.cpp — the client of the float64 Python reference process:
// finding and checking the interpreter, starting reference_server.py with its two pipes,
// one-line JSON requests with a deadline, tensors passed as files in a private
// temporary folder, and the on-disk cache of reference outputs (evaluator/python_reference.h).
#include "evaluator/python_reference.h"

#define XXH_INLINE_ALL
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

namespace tessera::evaluator {

const std::string& embedded_reference_server();  // generated from python/reference_server.py

namespace fs = std::filesystem;
using nlohmann::json;
using Kind = PythonReferenceError::Kind;

namespace {

constexpr int kRequestFd = 3, kReplyFd = 4;
constexpr const char* kInstallHint = "set TESSERA_PYTHON to a Python with PyTorch";

// Python 2 compatible up to the version check, so that an old interpreter is named as such.
constexpr const char* kProbe = R"(import sys, json
r = {"python": "%d.%d.%d" % tuple(sys.version_info[:3])}
try:
    import torch
    r["torch"] = torch.__version__
    if sys.argv[1].startswith("cuda"):
        r["cuda_build"] = torch.version.cuda
        r["cuda_devices"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
except Exception as e:
    r["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(r))
)";

// The same root as codegen::Compiler's cache.
fs::path cache_root() {
  if (const char* e = std::getenv("TESSERA_CACHE"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "tessera";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "tessera";
  return fs::temp_directory_path() / "tessera-cache";
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read ({})", p.string(), std::strerror(errno)));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_atomically(const fs::path& p, const char* data, size_t n) {
  fs::path tmp = p;
  tmp += fmt::format(".tmp{}-{}", getpid(), std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(data, static_cast<std::streamsize>(n));
    if (!out) throw std::runtime_error(fmt::format("{}: cannot write", tmp.string()));
  }
  fs::rename(tmp, p);
}

long long element_count(const std::vector<long long>& shape) {
  long long n = 1;
  for (long long s : shape) n *= s;
  return n;
}

std::string exit_status(int st) {
  if (WIFSIGNALED(st)) return fmt::format("was killed by signal {} ({})", WTERMSIG(st), strsignal(WTERMSIG(st)));
  return fmt::format("exited with status {}", WEXITSTATUS(st));
}

// `name` as an executable: a path as given, a bare name searched on PATH; "" if none.
std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');) {
    fs::path p = fs::path(d.empty() ? "." : d) / name;
    if (access(p.c_str(), X_OK) == 0 && !fs::is_directory(p)) return p.string();
  }
  return "";
}

// In the child after fork(): only async-signal-safe calls.
void close_from(int first) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
#endif
  for (int fd = first; fd < 4096; ++fd) close(fd);
}

// Runs argv with stdout and stderr captured (stdin /dev/null); the output and exit status.
std::pair<std::string, int> capture(const std::vector<std::string>& args, double timeout_s) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return {"pipe() failed", -1};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return close(out[0]), close(out[1]), std::pair<std::string, int>{"fork() failed", -1};
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    close_from(3);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
      kill(pid, SIGKILL);
      text += fmt::format("\n(no answer within {} s)", timeout_s);
      break;
    }
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0 && errno != EINTR) break;
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return {text, st};
}

// The probe's verdict on `python` for `device`: "" when it will do, else what is missing.
std::string check_interpreter(const std::string& python, const std::string& device, std::string* version) {
  auto [text, st] = capture({python, "-c", kProbe, device}, 300);
  json r;
  size_t last = text.find_last_of('{');
  if (last != std::string::npos) r = json::parse(text.substr(last), nullptr, false);
  if (!r.is_object() || !r.contains("python")) {
    std::string tail = text.size() > 1500 ? "..." + text.substr(text.size() - 1500) : text;
    return fmt::format("{} did not run ({}): {} ({})", python, exit_status(st), tail, kInstallHint);
  }
  *version = r["python"].get<std::string>();
  int major = 0, minor = 0;
  std::sscanf(version->c_str(), "%d.%d", &major, &minor);
  if (major < 3 || (major == 3 && minor < 8))
    return fmt::format("{} is Python {}; the reference process needs Python 3.8 or later ({})", python, *version,
                       kInstallHint);
  if (r.contains("error"))
    return fmt::format("{} (Python {}) cannot import torch: {} — pip install torch", python, *version,
                       r["error"].get<std::string>());
  if (device == "cpu") return "";
  int index = device == "cuda" ? 0 : std::atoi(device.c_str() + 5);
  int devices = r.value("cuda_devices", 0);
  if (index < devices) return "";
  std::string torch = r["torch"].get<std::string>();
  if (r["cuda_build"].is_null()) return fmt::format("torch {} has no CUDA device {} (a CPU-only build)", torch, device);
  return fmt::format("torch {} has no CUDA device {} (it sees {} device{})", torch, device, devices,
                     devices == 1 ? "" : "s");
}

bool valid_device(const std::string& d) {
  if (d == "cpu" || d == "cuda") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5) return false;
  return d.find_first_not_of("0123456789", 5) == std::string::npos;
}

// The embedded server, written once per content under <cache root>/python/.
fs::path server_script(const fs::path& root, std::string* hash) {
  const std::string& text = embedded_reference_server();
  *hash = fmt::format("{:016x}", XXH3_64bits(text.data(), text.size()));
  fs::path p = root / "python" / fmt::format("reference_server-{}.py", *hash);
  if (fs::exists(p) && fs::file_size(p) == text.size()) return p;
  fs::create_directories(p.parent_path());
  write_atomically(p, text.data(), text.size());
  return p;
}

}  // namespace

std::unique_ptr<PythonReference> PythonReference::start(const std::string& device, std::string* why) {
  std::string ignored;
  if (!why) why = &ignored;
  if (!valid_device(device)) return *why = fmt::format("device '{}': expected cpu, cuda or cuda:N", device), nullptr;
  std::string python;
  if (const char* e = std::getenv("TESSERA_PYTHON"); e && *e) {
    python = find_executable(e);
    if (python.empty()) {
      bool missing = std::string(e).find('/') == std::string::npos || !fs::exists(e);
      *why = fmt::format("TESSERA_PYTHON={}: {} ({})", e, missing ? "no such file" : "not executable", kInstallHint);
      return nullptr;
    }
  } else if ((python = find_executable("python3")).empty()) {
    *why = fmt::format("no python3 on PATH ({})", kInstallHint);
    return nullptr;
  }
  std::unique_ptr<PythonReference> r(new PythonReference());
  if (*why = check_interpreter(python, device, &r->python_version_); !why->empty()) return nullptr;
  r->python_ = python;
  r->device_ = device;
  r->cache_root_ = cache_root();
  try {
    r->spawn(server_script(r->cache_root_, &r->server_hash_));
  } catch (const std::exception& e) {
    *why = fmt::format("cannot start the reference process with {}: {}", python, e.what());
    return nullptr;
  }
  return r;
}

// Requests on the child's fd 3, replies on its fd 4; its stdout goes to our stderr
// (stderr inherited), stdin from /dev/null. It stays in our process group, so a kill of
// the worker's group reaches it; EOF on its requests ends it otherwise.
void PythonReference::spawn(const fs::path& script) {
  int req[2], rep[2];
  if (pipe2(req, O_CLOEXEC) != 0) throw std::runtime_error("pipe() failed");
  if (pipe2(rep, O_CLOEXEC) != 0) throw close(req[0]), close(req[1]), std::runtime_error("pipe() failed");
  std::string flag = "-u", s = script.string(), dev = "--device";
  std::vector<char*> argv = {python_.data(), flag.data(), s.data(), dev.data(), device_.data(), nullptr};
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    // Above every target number first, so that no dup2 overwrites a source.
    int a = fcntl(req[0], F_DUPFD, 10), b = fcntl(rep[1], F_DUPFD, 10);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(2, 1);
    dup2(a, kRequestFd);
    dup2(b, kReplyFd);
    close_from(kReplyFd + 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(req[0]);
  close(rep[1]);
  to_server_ = req[1];
  from_server_ = rep[0];
  pid_ = pid;
}

PythonReference::~PythonReference() {
  if (to_server_ >= 0) close(to_server_);
  if (pid_ > 0) {
    int st = 0;
    for (int i = 0; i < 100 && waitpid(pid_, &st, WNOHANG) == 0; ++i) usleep(20000);
    if (waitpid(pid_, &st, WNOHANG) == 0) kill(pid_, SIGKILL), waitpid(pid_, &st, 0);
  }
  if (from_server_ >= 0) close(from_server_);
  std::error_code ec;
  if (!scratch_.empty()) fs::remove_all(scratch_, ec);
}

void PythonReference::die(Kind kind, const std::string& how) {
  if (to_server_ >= 0) close(to_server_), to_server_ = -1;
  if (from_server_ >= 0) close(from_server_), from_server_ = -1;
  if (pid_ > 0) {
    int st = 0;
    if (kind == Kind::timeout) kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
    dead_ = kind == Kind::timeout ? how : fmt::format("{} ({})", how, exit_status(st));
    pid_ = -1;
  }
  throw PythonReferenceError(kind, fmt::format("the Python reference process ({}, {}) {}", python_, device_, dead_));
}

// Written with SIGPIPE blocked in this thread, so that a dead server is an error, not a signal.
void PythonReference::send_line(const std::string& line) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  size_t done = 0;
  int err = 0;
  while (done < line.size()) {
    ssize_t n = write(to_server_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (err == EPIPE) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err) die(Kind::process_died, fmt::format("stopped reading requests ({})", std::strerror(err)));
}

std::string PythonReference::read_line(double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  for (size_t nl; (nl = buffer_.find('\n')) == std::string::npos;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{from_server_, POLLIN, 0};
    int ready = left.count() > 0 ? poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30))) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) die(Kind::timeout, fmt::format("gave no reply within {} s and was killed", timeout_s));
    ssize_t n = read(from_server_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die(Kind::process_died, "ended before its reply");
    buffer_.append(buf, static_cast<size_t>(n));
  }
  size_t nl = buffer_.find('\n');
  std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  return line;
}

json PythonReference::request(const json& req, double timeout_s) {
  if (pid_ <= 0)
    throw PythonReferenceError(
        Kind::process_died,
        fmt::format("the Python reference process ({}, {}) is not running: it {}", python_, device_, dead_));
  send_line(req.dump() + "\n");
  std::string line = read_line(timeout_s);
  json reply = json::parse(line, nullptr, false);
  if (!reply.is_object()) die(Kind::process_died, "answered with a line that is not JSON: " + line.substr(0, 200));
  return reply;
}

const std::vector<std::string>& PythonReference::load(const fs::path& definition, const fs::path& baseline) {
  json req = {{"op", "load"}, {"definition", fs::absolute(definition).string()}, {"baseline", nullptr}};
  if (!baseline.empty()) req["baseline"] = fs::absolute(baseline).string();
  definition_ = definition;
  definition_bytes_ = read_bytes(definition);  // the cache key's, read as the server reads it
  narrowing_.clear();
  json reply = request(req, timeout_s_);
  if (!reply.value("ok", false)) {
    definition_bytes_.clear();
    std::string tb = reply.value("traceback", "");
    throw PythonReferenceError(
        Kind::raised,
        fmt::format("{}: loading the reference{} failed: {}\n{}", definition.string(),
                    baseline.empty() ? "" : " and " + baseline.string(), reply.value("error", "?"), tb),
        tb);
  }
  for (auto& n : reply["narrowing"])
    narrowing_.push_back(fmt::format("line {}: {}", n["line"].get<int>(), n["text"].get<std::string>()));
  return narrowing_;
}

// ---------------------------------------------------------------------------- inputs

fs::path PythonReference::scratch() {
  if (!scratch_.empty()) return scratch_;
  const char* tmp = std::getenv("TMPDIR");
  fs::path base = fs::is_directory("/dev/shm") && access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm")
                  : tmp && *tmp                                                 ? fs::path(tmp)
                                                                                : fs::path("/tmp");
  std::string pattern = (base / "tessera-reference-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error(fmt::format("{}: cannot make a temporary folder ({})", pattern, std::strerror(errno)));
  return scratch_ = pattern;
}

// The request's view of `inputs`; tensors written to files in the temporary folder.
json PythonReference::input_specs(const std::vector<PythonTensor>& inputs) {
  json specs = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PythonTensor& t = inputs[i];
    if (t.kind == "none") {
      specs.push_back({{"name", t.name}, {"kind", "none"}});
    } else if (t.kind == "scalar") {
      specs.push_back(
          {{"name", t.name}, {"kind", "scalar"}, {"dtype", spec::torch_dtype_name(t.dtype)}, {"value", t.value}});
    } else if (t.kind == "tensor") {
      size_t want = static_cast<size_t>(element_count(t.shape)) * spec::dtype_size(t.dtype);
      if (t.bytes != want || (want && !t.data))
        throw std::invalid_argument(fmt::format("reference input '{}': {} bytes given, its shape and {} need {}",
                                                t.name, t.bytes, spec::dtype_name(t.dtype), want));
      fs::path f = scratch() / fmt::format("in{}.bin", i);
      std::ofstream out(f, std::ios::binary | std::ios::trunc);
      out.write(static_cast<const char*>(t.data), static_cast<std::streamsize>(t.bytes));
      if (!out) throw std::runtime_error(fmt::format("{}: cannot write input '{}'", f.string(), t.name));
      input_files_.push_back(f);
      specs.push_back({{"name", t.name},
                       {"kind", "tensor"},
                       {"dtype", spec::torch_dtype_name(t.dtype)},
                       {"shape", t.shape},
                       {"path", f.string()}});
    } else {
      throw std::invalid_argument(
          fmt::format("reference input '{}': kind '{}' (expected tensor, scalar or none)", t.name, t.kind));
    }
  }
  return specs;
}

void PythonReference::clear_inputs() {
  std::error_code ec;
  for (auto& f : input_files_) fs::remove(f, ec);
  input_files_.clear();
}

// ---------------------------------------------------------------------------- the cache

namespace {

using OutputShapes = std::vector<std::pair<std::string, std::vector<long long>>>;

// XXH3-128 of everything a reference output depends on: the server's code, the
// definition's bytes, every input's name, kind, dtype, shape, bytes and value, the
// outputs asked for, and whether the as-written comparison was asked for.
std::string reference_key(const std::string& server_hash, const std::string& definition,
                          const std::vector<PythonTensor>& inputs, const OutputShapes& outputs, bool as_written) {
  XXH3_state_t st;
  XXH3_128bits_reset(&st);
  auto feed = [&](const void* p, size_t n) {
    unsigned long long len = n;
    XXH3_128bits_update(&st, &len, sizeof len);
    if (n) XXH3_128bits_update(&st, p, n);
  };
  auto text = [&](const std::string& s) { feed(s.data(), s.size()); };
  auto shape = [&](const std::vector<long long>& v) { feed(v.data(), v.size() * sizeof(long long)); };
  text("tessera reference v1");
  text(server_hash);
  text(definition);
  for (const auto& t : inputs) {
    text(t.name), text(t.kind), text(spec::torch_dtype_name(t.dtype)), shape(t.shape);
    if (t.kind == "tensor") feed(t.data, t.bytes);
    if (t.kind == "scalar") feed(&t.value, sizeof t.value);
  }
  for (const auto& [name, s] : outputs) text(name), shape(s);
  text(as_written ? "as written too" : "float64 only");
  XXH128_hash_t h = XXH3_128bits_digest(&st);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

bool read_f64(const fs::path& f, long long count, std::vector<double>* out) {
  std::ifstream in(f, std::ios::binary);
  if (!in) return false;
  out->assign(static_cast<size_t>(count), 0.0);
  in.read(reinterpret_cast<char*>(out->data()), static_cast<std::streamsize>(count * 8));
  return in.gcount() == count * 8 && in.peek() == std::ifstream::traits_type::eof();
}

double figure(const json& v) {
  return v.is_number() ? v.get<double>() : INFINITY;  // null: not finite
}

std::optional<ReferenceRun> read_cached(const fs::path& entry, const OutputShapes& outputs) {
  std::ifstream in(entry / "meta.json");
  if (!in) return std::nullopt;
  json meta = json::parse(in, nullptr, false);
  if (!meta.is_object()) return std::nullopt;
  ReferenceRun r;
  r.cached = true;
  for (const auto& [name, shape] : outputs)
    if (!read_f64(entry / (name + ".f64"), element_count(shape), &r.outputs[name])) return std::nullopt;
  json rel = meta.value("as_written_rel_l2", json::object()),
       max_abs = meta.value("as_written_max_abs", json::object());
  for (auto& [name, v] : rel.items()) r.as_written_rel_l2[name] = figure(v);
  for (auto& [name, v] : max_abs.items()) r.as_written_max_abs[name] = figure(v);
  return r;
}

// The folder the server writes into becomes the cache entry by one rename.
void store_cached(const fs::path& dir, const fs::path& entry, const ReferenceRun& r) {
  json meta = {
      {"seconds", r.seconds}, {"as_written_rel_l2", r.as_written_rel_l2}, {"as_written_max_abs", r.as_written_max_abs}};
  std::string text = meta.dump(1);
  std::error_code ec;
  write_atomically(dir / "meta.json", text.data(), text.size());
  fs::remove_all(entry, ec);  // a broken entry (read_cached refused it)
  fs::rename(dir, entry, ec);
  if (ec) fs::remove_all(dir, ec);  // another process stored it first
}

void check_output_name(const std::string& name) {
  if (name.empty() ||
      name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    throw std::invalid_argument(fmt::format("reference output '{}': not an identifier", name));
}

}  // namespace

// ---------------------------------------------------------------------------- requests

ReferenceRun PythonReference::run(const std::vector<PythonTensor>& inputs, const OutputShapes& outputs,
                                  bool as_written) {
  if (definition_bytes_.empty())
    throw PythonReferenceError(Kind::raised, "the Python reference process has no definition loaded");
  json wanted = json::array();
  for (const auto& [name, shape] : outputs)
    check_output_name(name), wanted.push_back({{"name", name}, {"shape", shape}});
  std::string key = reference_key(server_hash_, definition_bytes_, inputs, outputs, as_written);
  fs::path entry = cache_root_ / "reference" / key;
  if (auto hit = read_cached(entry, outputs)) return *hit;
  static std::atomic<int> serial{0};
  fs::path dir = cache_root_ / "reference" / fmt::format(".{}.tmp{}-{}", key, getpid(), serial++);
  std::error_code ec;
  bool caching = fs::create_directories(dir, ec) && !ec;
  if (!caching) dir = scratch() / fmt::format("out{}", serial++), fs::create_directories(dir);
  json req = {{"op", "reference"}, {"outputs", wanted}, {"out_dir", dir.string()}, {"as_written", as_written}};
  json reply;
  try {
    req["inputs"] = input_specs(inputs);
    reply = request(req, timeout_s_);
  } catch (...) {
    clear_inputs(), fs::remove_all(dir, ec);
    throw;
  }
  clear_inputs();
  if (!reply.value("ok", false)) {
    fs::remove_all(dir, ec);
    std::string tb = reply.value("traceback", "");
    throw PythonReferenceError(
        Kind::raised,
        fmt::format("{}: the reference failed: {}\n{}", definition_.string(), reply.value("error", "?"), tb), tb);
  }
  ReferenceRun r;
  r.seconds = reply.value("seconds", 0.0);
  for (const auto& [name, shape] : outputs)
    if (!read_f64(dir / (name + ".f64"), element_count(shape), &r.outputs[name]))
      throw PythonReferenceError(Kind::raised, fmt::format("{}: the reference process left no complete {}.f64 in {}",
                                                           definition_.string(), name, dir.string()));
  for (const auto& o : reply["outputs"]) {
    if (o.contains("as_written_rel_l2")) r.as_written_rel_l2[o["name"]] = figure(o["as_written_rel_l2"]);
    if (o.contains("as_written_max_abs")) r.as_written_max_abs[o["name"]] = figure(o["as_written_max_abs"]);
  }
  if (caching)
    store_cached(dir, entry, r);
  else
    fs::remove_all(dir, ec);
  return r;
}

std::vector<double> PythonReference::time_baseline(const std::vector<PythonTensor>& inputs, long long l2_bytes,
                                                   int min_samples, int max_samples, double target_rse,
                                                   double max_seconds, std::string* what) {
  if (definition_bytes_.empty())
    throw PythonReferenceError(Kind::raised, "the Python reference process has no definition loaded");
  json req = {{"op", "time"},
              {"l2_bytes", l2_bytes},
              {"min_samples", min_samples},
              {"max_samples", max_samples},
              {"target_rse", target_rse},
              {"max_seconds", max_seconds}};
  json reply;
  try {
    req["inputs"] = input_specs(inputs);
    reply = request(req, timeout_s_ + max_seconds);
  } catch (...) {
    clear_inputs();
    throw;
  }
  clear_inputs();
  if (!reply.value("ok", false)) {
    std::string tb = reply.value("traceback", "");
    throw PythonReferenceError(
        Kind::raised,
        fmt::format("{}: timing the baseline failed: {}\n{}", definition_.string(), reply.value("error", "?"), tb), tb);
  }
  if (what) *what = reply.value("what", "");
  return reply["samples_ms"].get<std::vector<double>>();
}

}  // namespace tessera::evaluator
