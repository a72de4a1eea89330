#include "toroid/driver/package.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "toroid/graph/inputs.h"
#include "toroid/graph/text.h"
#include "toroid/runtime/so_cache.h"
#include "toroid/support/error.h"
#include "toroid/support/file.h"
#include "toroid/support/tool.h"
#ifdef TOROID_WITH_CUDA
#include "toroid/runtime/cuda/executor.h"
#endif

namespace toroid::driver {

namespace {

constexpr const char* kMagic = "toroidpkg 1";
constexpr size_t kAlign = 64;

// The parameter nodes' values, in graph_inputs order.
std::vector<const Value*> param_values(const Graph& g) {
  std::vector<const Value*> out;
  for (const Value* v : graph_inputs(g))
    if (v->node()->kind() == NodeKind::Param) out.push_back(v);
  return out;
}

// A parameter's static sizes (a package's weights have no symbolic sizes).
std::vector<int64_t> static_sizes(const Value* v) {
  std::vector<int64_t> out;
  for (SymExpr s : v->meta().sizes) {
    std::optional<int64_t> n = s.as_int();
    if (!n)
      user_error("parameter " + v->name() + " has a symbolic size (" + s.str() + "): a package's weights need static sizes",
                 v->node()->loc());
    out.push_back(*n);
  }
  return out;
}

class Writer {
 public:
  // Adds a blob; returns "OFFSET SIZE" for the manifest.
  std::string add(const std::string& bytes) {
    data_.append((kAlign - data_.size() % kAlign) % kAlign, '\0');
    std::string where = std::to_string(data_.size()) + " " + std::to_string(bytes.size());
    data_ += bytes;
    return where;
  }
  void line(const std::string& l) { manifest_ += l + "\n"; }
  void write(const std::string& path) const {
    std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f << kMagic << "\n" << manifest_ << "end\n" << data_;
      if (!f) user_error("cannot write the package " + path);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) user_error("cannot write the package " + path);
  }

 private:
  std::string manifest_, data_;
};

// The package's manifest, read line by line; `blob` returns the bytes a line's "OFFSET SIZE" name.
class Reader {
 public:
  Reader(std::string bytes, std::string path) : bytes_(std::move(bytes)), path_(std::move(path)) {
    size_t first = bytes_.find('\n');
    if (first == std::string::npos || bytes_.compare(0, first, kMagic) != 0)
      fail("not a toroid package (it does not start with '" + std::string(kMagic) + "')");
    size_t at = first + 1;
    for (;;) {
      size_t end = bytes_.find('\n', at);
      if (end == std::string::npos) fail("its manifest has no 'end' line (truncated?)");
      std::string line = bytes_.substr(at, end - at);
      at = end + 1;
      if (line == "end") break;
      lines_.push_back(line);
    }
    data_ = at;
  }
  const std::vector<std::string>& lines() const { return lines_; }
  std::string blob(std::istringstream& in, const std::string& what) const {
    size_t offset = 0, size = 0;
    if (!(in >> offset >> size)) fail("a malformed " + what + " entry");
    if (offset > bytes_.size() - data_ || size > bytes_.size() - data_ - offset)
      fail(what + " lies past the end of the file (truncated?)");
    return bytes_.substr(data_ + offset, size);
  }
  [[noreturn]] void fail(const std::string& why) const { user_error("package " + path_ + ": " + why); }

 private:
  std::string bytes_, path_;
  std::vector<std::string> lines_;
  size_t data_ = 0;
};

}  // namespace

void write_package(const std::string& path, const std::string& text, const std::string& filename,
                   const CompileOptions& options, const std::vector<ops::HostTensor>& params) {
  CompileOptions co = options;
  co.keep_kernels = true;
  co.load = false;
  co.compile = true;
  co.dump_dir.clear();
  std::unique_ptr<CompiledModule> m = CompiledModule::compile(text, filename, co);
  const Specialization& s = m->current();
  std::vector<const Value*> values = param_values(m->graph());
  if (params.size() != values.size())
    user_error("the graph has " + std::to_string(values.size()) + " parameters, got " + std::to_string(params.size()));
  Writer w;
  const Target& t = m->options().target;
  w.line(std::string("version ") + version_string());
  w.line("graph " + m->graph().name());
  w.line("device " + std::string(t.is_cuda() ? "cuda" : "cpu"));
  if (t.is_cuda()) w.line("arch " + std::to_string(t.cuda_arch));
  else w.line("isa " + runtime::host_isa());
  w.line("flags " + std::to_string(co.dynamic) + " " + std::to_string(co.deterministic) + " " +
         std::to_string(co.tf32_convolutions) + " " + std::to_string(co.tf32_matmuls) + " " +
         std::to_string(m->options().emulate_precision_casts));
  w.line("text " + w.add(text));
  w.line("wrapper " + w.add(codegen::wrapper::print_wrapper(s.wrapper)));
  for (size_t i = 0; i < values.size(); ++i) {
    const Value* v = values[i];
    std::vector<int64_t> sizes = static_sizes(v);
    const ops::HostTensor& p = params[i];
    if (p.dtype() != v->meta().dtype || p.sizes() != sizes)
      user_error("parameter " + std::to_string(i) + " (" + v->name() + "): expected " +
                     std::string(dtype_short_name(v->meta().dtype)) + " of its node's sizes, got " + p.describe(),
                 v->node()->loc());
    ops::HostTensor c = p.is_contiguous() ? p : p.clone();
    std::string bytes(reinterpret_cast<const char*>(c.data()), static_cast<size_t>(c.numel() * c.element_size()));
    w.line("param " + std::to_string(i) + " " + w.add(bytes));
  }
  for (const auto& [key, image] : s.kernel_images) w.line("kernels " + key + " " + w.add(image));
  w.write(path);
}

std::unique_ptr<Package> Package::load(const std::string& path) {
  Reader r(read_file(path), path);
  std::string text, wrapper, device = "cpu", isa, version;
  int arch = 0;
  bool dynamic = true, deterministic = false, tf32c = false, tf32m = false, emulate_casts = false;
  auto prebuilt = std::make_shared<PrebuiltKernels>();
  auto cubins = std::make_shared<std::unordered_map<std::string, std::string>>();
  std::vector<std::string> param_bytes;
  for (const std::string& line : r.lines()) {
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "version") in >> version;
    else if (word == "graph") continue;
    else if (word == "device") in >> device;
    else if (word == "arch") in >> arch;
    else if (word == "isa") isa = line.size() > 4 ? line.substr(4) : "";
    else if (word == "flags") in >> dynamic >> deterministic >> tf32c >> tf32m >> emulate_casts;
    else if (word == "text") text = r.blob(in, "text");
    else if (word == "wrapper") wrapper = r.blob(in, "wrapper");
    else if (word == "param") {
      size_t index = 0;
      in >> index;
      if (index != param_bytes.size()) r.fail("parameter " + std::to_string(index) + " out of order");
      param_bytes.push_back(r.blob(in, "param"));
    } else if (word == "kernels") {
      std::string key;
      in >> key;
      (device == "cuda" ? *cubins : prebuilt->cpu)[key] = r.blob(in, "kernels");
    } else {
      r.fail("unknown manifest entry '" + word + "'");
    }
  }
  if (version != version_string())
    r.fail("written by toroid " + version + ", this is toroid " + version_string() + ": package it again");
  if (device != "cpu" && device != "cuda") r.fail("unknown device '" + device + "'");
  prebuilt->cpu_isa = isa;
  if (device == "cuda") prebuilt->cuda = cubins;
  CompileOptions co;
  co.target = device == "cuda" ? Target::cuda(arch) : Target::cpu();
  co.dynamic = dynamic;
  co.deterministic = deterministic;
  co.tf32_convolutions = tf32c;
  co.tf32_matmuls = tf32m;
  co.emulate_precision_casts = emulate_casts;
  co.prebuilt = prebuilt;
  std::unique_ptr<Package> p(new Package());
  p->device_ = device;
  p->text_ = text;
  p->module_ = CompiledModule::compile(text, path, co);
  // The program this toroid builds from the graph is the one packaged, line for line.
  if (codegen::wrapper::print_wrapper(p->module_->current().wrapper) != wrapper)
    r.fail("this toroid builds another Wrapper IR program from its graph than the packaged one: package it again");
  std::vector<const Value*> values = param_values(p->module_->graph());
  if (values.size() != param_bytes.size())
    r.fail("its graph has " + std::to_string(values.size()) + " parameters, the file " + std::to_string(param_bytes.size()));
  p->num_inputs_ = graph_inputs(p->module_->graph()).size() - values.size();
  for (size_t i = 0; i < values.size(); ++i) {
    ops::HostTensor t = ops::HostTensor::zeros(values[i]->meta().dtype, static_sizes(values[i]));
    if (static_cast<size_t>(t.numel() * t.element_size()) != param_bytes[i].size())
      r.fail("parameter " + std::to_string(i) + " has " + std::to_string(param_bytes[i].size()) + " bytes, its node " +
             t.describe());
    if (!param_bytes[i].empty()) std::memcpy(t.data(), param_bytes[i].data(), param_bytes[i].size());
    ops::RtValue v(std::move(t));
    p->host_params_.push_back(v);
#ifdef TOROID_WITH_CUDA
    if (device == "cuda") v = runtime::cuda::to_device(v);
#endif
    p->params_.push_back(std::move(v));
  }
  return p;
}

bool Package::is_package(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string first;
  return f && std::getline(f, first) && first == kMagic;
}

std::vector<ops::RtValue> Package::run(const std::vector<ops::RtValue>& inputs) {
  if (inputs.size() != num_inputs_)
    user_error("the package's graph takes " + std::to_string(num_inputs_) + " inputs (its parameters are packaged), got " +
               std::to_string(inputs.size()));
  std::vector<ops::RtValue> all;
  all.reserve(inputs.size() + params_.size());
  if (device_ != "cuda") {
    all = inputs;
    all.insert(all.end(), params_.begin(), params_.end());
    return module_->run(all);
  }
#ifdef TOROID_WITH_CUDA
  for (const ops::RtValue& v : inputs)
    all.push_back(v.is_tensor() ? runtime::cuda::to_device(v) : v);
  all.insert(all.end(), params_.begin(), params_.end());
  std::vector<ops::RtValue> out = module_->run_device(all);
  for (ops::RtValue& v : out) v = runtime::cuda::to_host(v);
  module_->check_device_errors();
  return out;
#else
  user_error("this toroid was built without CUDA: it cannot run a CUDA package");
#endif
}

}  // namespace toroid::driver
