// Kernel symbols (codegen/kernel_symbol.cpp): kernels alike but for their names and comments get
// one symbol, and the rename touches only the kernel's own identifiers.
#include <gtest/gtest.h>

#include "toroid/codegen/kernel.h"

using namespace toroid::codegen;

TEST(KernelSymbol, RenamesOnlyIdentifiersTheNameStarts) {
  std::string code =
      "// kernel3: outer [8]\n"
      "static void kernel3_body(int* p) { p[0] = 1; }  // buf12\n"
      "extern \"C\" void kernel3(int* p) { kernel3_body(p); kernel31(p); my_kernel3(p); }\n";
  EXPECT_EQ(renamed_code(code, "kernel3", "tk_x"),
            "static void tk_x_body(int* p) { p[0] = 1; }\n"
            "extern \"C\" void tk_x(int* p) { tk_x_body(p); kernel31(p); my_kernel3(p); }\n");
}

TEST(KernelSymbol, KeepsSlashesInsideLiterals) {
  EXPECT_EQ(renamed_code("const char* s = \"a // \\\" b\"; // why\n", "k0", "tk"),
            "const char* s = \"a // \\\" b\";\n");
  EXPECT_EQ(renamed_code("char c = '\"'; int k0 = 1; // k0\n", "k0", "tk"), "char c = '\"'; int tk = 1;\n");
}

TEST(KernelSymbol, AlikeKernelsShareASymbolAndOthersDoNot) {
  std::string a = "// kernel4: buf7 from %add_3\nextern \"C\" void kernel4(float* p) { p[0] += 1; }  // buf7\n";
  std::string b = "// kernel9: buf21 from %add_9\nextern \"C\" void kernel9(float* p) { p[0] += 1; }  // buf21\n";
  std::string c = "// kernel5: buf8\nextern \"C\" void kernel5(float* p) { p[0] += 2; }\n";
  EXPECT_EQ(content_symbol("cpu", a, "kernel4"), content_symbol("cpu", b, "kernel9"));
  EXPECT_NE(content_symbol("cpu", a, "kernel4"), content_symbol("cpu", c, "kernel5"));
  EXPECT_NE(content_symbol("cpu", a, "kernel4"), content_symbol("flat", a, "kernel4"));
  EXPECT_EQ(content_symbol("cpu", a, "kernel4").rfind("tk_cpu_", 0), 0u);
  EXPECT_EQ(content_symbol("cpu", a, "kernel4").size(), std::string("tk_cpu_").size() + 16);
}
