// One 16 x 16 int32 tile of C += A x B over a K loop, written in C with clang's AMX API (amxintrin.h,
// the seed's programming model): A signed int8, B unsigned int8 (VNNI-packed), so each step is __tile_dpbsud.
// The same program as tile_gemm_s8u8.ll, from C: `systolic run examples/amx/tile_gemm_s8u8.c` compiles it with
// clang (-O2), then the tile compiler places the ldtilecfg and allocates the tiles, and the emulated AMX runs it.
//
//   C[16 x 16] (int32, row stride 64 bytes) += A[16 x K] (s8, row stride K bytes) x B (u8, VNNI-packed: K/4 rows
//   of 64 bytes, byte 4n + j of row r holding B[4r + j][n]), K = 64 * ktiles.
//
// systolic-run: device sapphirerapids
// systolic-run: function gemm16
// systolic-run: args @A @B @C 4
// systolic-run: fill @A = random 1
// systolic-run: fill @B = random 2
// systolic-run: fill @C = random 3
// systolic-run: oracle @C = gemm-int8 A=@A:s8 B=@B:u8 M=16 N=16 K=256
#include <immintrin.h>

char A[4096] __attribute__((aligned(64)));
char B[4096] __attribute__((aligned(64)));
char C[1024] __attribute__((aligned(64)));

void gemm16(char *a, char *b, char *c, int ktiles) {
  long kstride = 64L * ktiles;
  __tile1024i acc = {16, 64};
  __tile_loadd(&acc, c, 64);
  for (int t = 0; t < ktiles; t++) {
    __tile1024i ta = {16, 64};
    __tile1024i tb = {16, 64};
    __tile_loadd(&ta, a + 64 * t, kstride);
    __tile_loadd(&tb, b + 1024 * t, 64);
    __tile_dpbsud(&acc, ta, tb);
  }
  __tile_stored(c, 64, acc);
}
