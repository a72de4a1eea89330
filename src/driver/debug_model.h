// What a debug directory's files and report.html both show, computed once (debug_dir.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/driver/debug.h"

namespace toroid::driver {

struct Specialization;

// The bytes held after a line of the top-level program, at the compile's sizes (nullopt where
// an unbacked size decides them).
struct MemoryPoint {
  size_t line = 0;  // 1-based, as the Wrapper IR's messages count
  std::string what;
  std::optional<int64_t> bytes;
};
std::vector<MemoryPoint> memory_timeline(const Specialization& s);
std::optional<int64_t> planned_peak_at_hints(const Specialization& s);

// A graph node that runs its reference kernel, or a device library kernel without a compiled one.
struct Fallback {
  std::string node, op;
  size_t line = 0;
  std::string runs_on;  // "reference kernel" or the device kernel's name
  std::string why;
};
std::vector<Fallback> fallbacks_of(const codegen::wrapper::WrapperProgram& w);

// report.html: a self-contained page (inline SVG, CSS and script; nothing fetched) with the
// graph coloured by what runs each node, every kernel's source and launch, live memory over
// the program's lines (`memory`, memory_timeline's), fallbacks, the recompile history and the
// time of each phase.
std::string render_report(const Specialization& s, const CompileTrace& trace, const std::vector<CompileEvent>& history,
                          const std::vector<MemoryPoint>& memory);

// The file of the graph after pass `index` ("passes/02-cse.tir"), relative to the directory.
std::string pass_file(size_t index, const std::string& pass);

}  // namespace toroid::driver
