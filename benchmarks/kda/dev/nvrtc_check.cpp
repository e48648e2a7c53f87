// benchmarks/kda/dev/nvrtc_check.cpp — compiles targets/kda/kda_chunk.cu through NVRTC
// (tessera's compiler, whose register allocation differs from nvcc's) for every valid
// configuration of spec.json (BV 32/64/128, SW 4/8, PREC 0/1/2 with PREC 2 only at
// SW 8; GM 1 with TRN 0/1, SEG 0/16 and PRE 0/1; GM 2 with TRN 0/1 and SEG 0/16) on sm_90a and sm_103a, with tessera's
// options, and prints each kernel's registers and spills; exit 1 on a failed compile or any spill. The ctest
// SampledVariantsCompileWithoutSpills checks only 3 sampled configurations.
// Build: g++ -std=c++17 -O1 benchmarks/kda/dev/nvrtc_check.cpp -I/usr/local/cuda/include \
//          -L/usr/local/cuda/lib64 -lnvrtc -o benchmarks/kda/dev/bin/nvrtc_check
// Run from the repository root (no GPU needed).
#include <nvrtc.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

int main() {
  std::ifstream f("targets/kda/kda_chunk.cu");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string src = ss.str();
  int bad = 0;
  for (const char* arch : {"sm_90a", "sm_103a"})
    for (int pre : {0, 1})
      for (int seg : {0, 16})
        for (int gm : {0, 1, 2})
          for (int trn : {0, 1})
            for (int stg : {0, 1})
              for (int prec : {0, 1, 2})
                for (int sw : {4, 8})
                  for (int bv : {32, 64, 128}) {
                    if (bv < 2 * sw || (prec == 2 && sw != 8) || (stg == 1 && prec != 2) ||
                        (gm >= 1 && (prec != 2 || bv != 128 || stg != 0 || std::string(arch) != "sm_90a")) ||
                        (gm == 2 && pre) || (trn && !gm) || (seg && !gm) || (pre && (!gm || seg)))
                      continue;
                    std::string s = "#define BV " + std::to_string(bv) + "\n#define SW " + std::to_string(sw) +
                                    "\n#define PREC " + std::to_string(prec) + "\n#define STG " + std::to_string(stg) +
                                    "\n#define GM " + std::to_string(gm) + "\n#define TRN " + std::to_string(trn) +
                                    "\n#define SEG " + std::to_string(seg) + "\n#define PRE " + std::to_string(pre) +
                                    "\n" + src;
                    nvrtcProgram prog;
                    nvrtcCreateProgram(&prog, s.c_str(), "kda_chunk.cu", 0, nullptr, nullptr);
                    std::vector<std::string> opts = {std::string("--gpu-architecture=") + arch,
                                                     "-std=c++17",
                                                     "--ptxas-options=-v",
                                                     "-default-device",
                                                     "-Itargets/common",
                                                     "-Itargets/kda",
                                                     "-I/usr/local/cuda/include"};
                    std::vector<const char*> o;
                    for (auto& x : opts) o.push_back(x.c_str());
                    nvrtcResult rc = nvrtcCompileProgram(prog, (int)o.size(), o.data());
                    size_t n = 0;
                    nvrtcGetProgramLogSize(prog, &n);
                    std::string log(n, '\0');
                    if (n) nvrtcGetProgramLog(prog, log.data());
                    nvrtcDestroyProgram(&prog);
                    std::istringstream ls(log);
                    std::string line, fn, summary;
                    bool spill = false;
                    while (std::getline(ls, line)) {
                      if (line.find("Compiling entry function") != std::string::npos)
                        fn = line.substr(line.find('\'') + 1, 17);
                      if (line.find("spill stores") != std::string::npos &&
                          line.find(" 0 bytes spill stores, 0 bytes spill loads") == std::string::npos)
                        spill = true;
                      if (line.find("Used") != std::string::npos)
                        summary += " " + fn + ":" + line.substr(line.find("Used") + 5, 3);
                    }
                    const bool fail = rc != NVRTC_SUCCESS || spill;
                    bad += fail;
                    printf("%s BV%d SW%d P%d STG%d GM%d TRN%d SEG%d PRE%d:%s%s\n", arch, bv, sw, prec, stg, gm, trn,
                           seg, pre, summary.c_str(),
                           fail ? (rc != NVRTC_SUCCESS ? "  COMPILE FAILED" : "  SPILLS") : "");
                    if (rc != NVRTC_SUCCESS) printf("%s\n", log.c_str());
                  }
  printf("%s\n", bad ? "FAIL" : "ok: no spills");
  return bad ? 1 : 0;
}
