// The K loop of tile_gemm_s8u8.c with AMX-MOVRS loads (Diamond Rapids): A through __tile_loaddrs (TILELOADDRS, a
// read-shared hint) and B through __tile_stream_loaddrs (TILELOADDRST1); both load what TILELOADD loads. A and B
// are signed int8 here, so each step is __tile_dpbssd. `systolic amx run examples/amx/tile_gemm_movrs.c -f gemm16
// --arg @A --arg @B --arg @C --arg 4 --device dmr` runs it; on a CPU without AMX-MOVRS (spr) the first load is #UD.
//
// systolic-run: device diamondrapids
// systolic-run: function gemm16
// systolic-run: args @A @B @C 4
// systolic-run: fill @A = random 1
// systolic-run: fill @B = random 2
// systolic-run: fill @C = random 3
// systolic-run: oracle @C = gemm-int8 A=@A:s8 B=@B:s8 M=16 N=16 K=256
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
    __tile_loaddrs(&ta, a + 64 * t, kstride);
    __tile_stream_loaddrs(&tb, b + 1024 * t, 64);
    __tile_dpbssd(&acc, ta, tb);
  }
  __tile_stored(c, 64, acc);
}
