// tests/llm/sanitize_test.cpp — the static checks on proposed sources: what a
// normal kernel may do, and each forbidden construct (with its line), including
// attempts to hide one behind comments, line splices and macros.
#include "agent/llm/sanitize.h"

#include <gtest/gtest.h>

namespace tessera::llm {
namespace {

std::vector<std::string> rules(const std::vector<Violation>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.rule);
  return out;
}

// The first violation's line, or 0.
int first_line(const std::vector<Violation>& v) {
  return v.empty() ? 0 : v.front().line;
}

TEST(StaticCheck, AcceptsAnOrdinaryKernel) {
  const char* src = R"(// a comment mentioning #include "/etc/passwd" and std::vector and <<<
#include <cuda_bf16.h>
#include <cuda/std/array>
#include <cooperative_groups.h>
#include "tile/mma.cuh"
#define DEV __device__ __forceinline__
#define TILE 1'024
namespace cg = cooperative_groups;
__constant__ float kScale[4];
__device__ const float kTable[3] = {1.f, 2.f, 3.f};
__device__ constexpr int kWarps = 4;
struct Acc { static constexpr int N = 8; float v[N]; DEV void zero() { for (int i = 0; i < N; ++i) v[i] = 0; } };
DEV float square(float x) { return x * x; }
template <int N> __host__ __device__ int twice() { return 2 * N; }
extern "C" __global__ void __launch_bounds__(256) k(const float* x, float* y, long long n) {
  extern __shared__ float dyn[];
  __shared__ __align__(16) float buf[TILE / 4];
  static __shared__ int flag;
  const char quote = '"';
  const char* msg = "cudaMalloc <<< main( std::";
  cuda::std::array<float, 2> pair{1.f, 2.f};
  auto add = [=] __device__ (float a) { return a + pair[0]; };
  long long i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (i < n) y[i] = add(square(x[i])) * kScale[0] + kTable[lane % 3] + quote + msg[0] + dyn[0] + buf[0] + flag;
  if (i == 0) printf("done %d\n", twice<3>());
}
)";
  auto v = check_source(src);
  EXPECT_TRUE(v.empty()) << format_violations(v);
}

TEST(StaticCheck, RejectsIncludesOutsideTheAllowedSet) {
  auto v = check_source("#include <cuda_fp16.h>\n#include \"/etc/hostname\"\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].line, 2);
  EXPECT_EQ(v[0].rule, "include");
  EXPECT_NE(v[0].message.find("absolute path"), std::string::npos);

  for (const char* bad :
       {"#include <cstdio>\n", "#include <stdio.h>\n", "#include \"../secret.h\"\n",
        "#include \"tile/../../../etc/passwd\"\n", "#include <cuda_runtime.h>\n", "  #  include </proc/self/environ>\n",
        "#include_next <cuda_fp16.h>\n", "#import \"tile/x.cuh\"\n", "#include \"C:\\\\x.h\"\n"}) {
    auto r = check_source(bad);
    ASSERT_FALSE(r.empty()) << bad;
    EXPECT_EQ(r[0].rule, "include") << bad;
  }
}

TEST(StaticCheck, IncludeTricksAreCaught) {
  // A line splice inside the directive; the violation is on the directive's first line.
  auto spliced = check_source("int a;\n#inc\\\nlude \"/etc/hostname\"\nint b;\n");
  ASSERT_EQ(spliced.size(), 1u);
  EXPECT_EQ(spliced[0].line, 2);
  // A computed include.
  auto macro = check_source("#define H \"/etc/passwd\"\n#include H\n");
  ASSERT_EQ(rules(macro), std::vector<std::string>{"include"});
  EXPECT_EQ(macro[0].line, 2);
  // __has_include probes a file.
  auto probe = check_source("#if __has_include(\"/etc/shadow\")\n#endif\n");
  ASSERT_EQ(rules(probe), std::vector<std::string>{"include"});
  // A directive hidden after a block comment on the same line still counts, and
  // one inside a comment does not.
  EXPECT_EQ(check_source("/* x */ #include </etc/passwd>\n").size(), 1u);
  EXPECT_TRUE(check_source("/*\n#include </etc/passwd>\n*/\n").empty());
  EXPECT_EQ(rules(check_source("%:include </etc/passwd>\n")).front(), "preprocessor");
  EXPECT_EQ(rules(check_source("#line 1 \"/etc/passwd\"\n")).front(), "preprocessor");
}

TEST(StaticCheck, TargetFilesMayBeIncludedByExactName) {
  StaticCheckOptions options;
  options.target_files = {"rmsnorm_common.cuh"};
  EXPECT_TRUE(check_source("#include \"rmsnorm_common.cuh\"\n", options).empty());
  EXPECT_FALSE(check_source("#include \"reference.cu\"\n", options).empty());
  EXPECT_FALSE(check_source("#include \"rmsnorm_common.cuh\"\n").empty());  // not listed
}

TEST(StaticCheck, RejectsHostCode) {
  auto v = check_source("#include <cuda_fp16.h>\nint main() { return 0; }\n");
  ASSERT_EQ(rules(v), std::vector<std::string>{"host_code"});
  EXPECT_EQ(v[0].line, 2);
  EXPECT_EQ(first_line(check_source("__device__ void f() {\n  std::vector<int> v;\n}\n")), 2);
  EXPECT_FALSE(check_source("__device__ float f(float x) { return ::std::sqrt(x); }\n").empty());
  EXPECT_FALSE(check_source("using namespace std;\n").empty());
  EXPECT_TRUE(check_source("using namespace cuda::std;\n").empty());
  EXPECT_FALSE(check_source("__host__ void setup() {}\n").empty());
  EXPECT_FALSE(check_source("__device__ void f() { FILE* f = fopen(\"x\", \"r\"); }\n").empty());
}

TEST(StaticCheck, RejectsLaunchesStreamsAndAllocation) {
  struct Case {
    const char* src;
    const char* rule;
  };
  for (const Case& c : std::vector<Case>{
           {"__global__ void a() {}\n__global__ void b() { a<<<1, 1>>>(); }\n", "launch"},
           {"__global__ void b() { a< < <1, 1>>>(); }\n", "launch"},
           {"__global__ void b(void* p) { cudaLaunchDevice(p, 0, dim3(1), dim3(1), 0, 0); }\n", "launch"},
           {"__global__ void b() { cudaStream_t s; cudaStreamCreateWithFlags(&s, 1); }\n", "stream"},
           {"__global__ void b() { cudaDeviceSynchronize(); }\n", "stream"},
           {"__global__ void b() { float* p; cudaMalloc(&p, 4); }\n", "allocation"},
           {"__global__ void b() { float* p = (float*)malloc(64); free(p); }\n", "allocation"},
       }) {
    auto v = check_source(c.src);
    ASSERT_FALSE(v.empty()) << c.src;
    EXPECT_EQ(v[0].rule, c.rule) << c.src;
  }
  // Hidden behind object-like macros.
  auto hidden = check_source("#define GO cudaLaunchKernel\n__global__ void b() {\n  GO(0);\n}\n");
  ASSERT_FALSE(hidden.empty());
  EXPECT_EQ(hidden[0].line, 3);
  // ... and inside a function-like macro's body.
  EXPECT_FALSE(check_source("#define ALLOC(n) malloc(n)\n").empty());
}

TEST(StaticCheck, RejectsStateThatPersistsBetweenLaunches) {
  auto v = check_source("#include <cuda_fp16.h>\n__device__ int counter;\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "global_state");
  EXPECT_EQ(v[0].line, 2);
  EXPECT_NE(v[0].message.find("'counter'"), std::string::npos);

  for (const char* bad : {"__device__ float cache[16] = {0};\n", "__device__ int x{5};\n",
                          "static __device__ unsigned long long calls;\n", "__managed__ int m;\n",
                          "namespace detail { __device__ float last; }\n", "extern \"C\" { __device__ float last; }\n",
                          "#define G __device__\nG int hidden;\n", "__device__ __align__(16) float aligned[4];\n",
                          "__global__ void k() {\n  static int calls = 0;\n  ++calls;\n}\n",
                          "struct S { static int shared_count; };\n"}) {
    auto r = check_source(bad);
    ASSERT_FALSE(r.empty()) << bad;
    EXPECT_EQ(r[0].rule, "global_state") << bad;
  }
  StaticCheckOptions allowed;
  allowed.allowed_device_globals = {"counter"};
  EXPECT_TRUE(check_source("__device__ int counter;\n", allowed).empty());
  EXPECT_FALSE(check_source("__device__ int other;\n", allowed).empty());
}

TEST(StaticCheck, TrapIsRejectedOtherAsmIsNot) {
  auto v = check_source("__global__ void k() {\n  asm volatile(\"trap;\");\n}\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "trap");
  EXPECT_EQ(v[0].line, 2);
  EXPECT_FALSE(check_source("__global__ void k() { __trap(); }\n").empty());
  EXPECT_TRUE(check_source("__global__ void k(int* p) {\n  asm volatile(\"st.global.u32 [%0], 1;\" :: \"l\"(p));\n}\n")
                  .empty());
  EXPECT_TRUE(check_source("__global__ void k() { asm(\"// a trap is not set here\" ::); }\n").size() == 1u)
      << "the word trap inside asm text is rejected even in a PTX comment";
}

TEST(StaticCheck, LiteralsDoNotShiftLinesOrHideCode) {
  const char* src =
      "__global__ void k(char* c) {\n"
      "  c[0] = '\"'; c[1] = '\\'';\n"
      "  const char* raw = R\"x(multi\nline \" raw)x\";\n"
      "  int big = 1'000'000;\n"
      "  cudaMalloc(0, 0);\n"
      "}\n";
  auto v = check_source(src);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].line, 6);
}

TEST(StaticCheck, FormatsViolationsWithLines) {
  auto v = check_source("#include <cstdio>\nint main() {}\n");
  std::string text = format_violations(v);
  EXPECT_NE(text.find("line 1: [include]"), std::string::npos);
  EXPECT_NE(text.find("line 2: [host_code]"), std::string::npos);
}

}  // namespace
}  // namespace tessera::llm
