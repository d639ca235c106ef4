/* The seed proposal's example (specs/amx-llvm-programming-model.md, section 4) written with clang's AMX API
 * (amxintrin.h): the proposal's `__tile` struct became clang's `__tile1024i` ({row, col, tile}), `__tile_dpbsud`
 * is clang's `__tile_dpbssd`. Three tiles {row, col} are loaded from buf (cond != 0) or buf2 (cond == 0) with
 * stride 32, then c += a * b (TDPBSSD) and c is stored to buf.
 *
 *   systolic amx run examples/amx/api.c --cflags "-O0 -g" --function api --arg 1 --arg 8 --arg 32
 *
 * examples/amx/api.ll is section 5's IR listing of the same code, in the form LLVM 22 accepts. */
#include <immintrin.h>

#define STRIDE 32
char buf[1024];
char buf2[1024];

void api(int cond, short row, short col) {
  __tile1024i a = {row, col};
  __tile1024i b = {row, col};
  __tile1024i c = {row, col};

  if (cond) {
    __tile_loadd(&a, buf, STRIDE);
    __tile_loadd(&b, buf, STRIDE);
    __tile_loadd(&c, buf, STRIDE);
  } else {
    __tile_loadd(&a, buf2, STRIDE);
    __tile_loadd(&b, buf2, STRIDE);
    __tile_loadd(&c, buf2, STRIDE);
  }
  __tile_dpbssd(&c, a, b);
  __tile_stored(buf, STRIDE, c);
}
