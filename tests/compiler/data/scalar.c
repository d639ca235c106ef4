#include <stdint.h>
struct pair { int16_t a; int32_t b; int64_t c; };
struct pair P[4];
uint8_t bytes[64];
int32_t table[16] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16};

int32_t mix(int32_t x, int32_t y) {
  uint32_t u = (uint32_t)x * 2654435761u + (uint32_t)y;
  int32_t s = (int32_t)(u >> 7) ^ (x << 3);
  if (y != 0 && !(x == INT32_MIN && y == -1)) s += x / y + x % y;
  return s;
}
int64_t loop(int32_t n) {
  int64_t acc = 0;
  for (int i = 0; i < n; i++) {
    acc = acc * 31 + table[i & 15];
    bytes[i & 63] = (uint8_t)acc;
  }
  return acc;
}
int32_t sw(int32_t k) {
  switch (k) {
    case 0: return 10;
    case 1: return 20;
    case 5: return 50;
    case -3: return -30;
    default: return k * 2;
  }
}
int64_t structs(int32_t i, int16_t a, int32_t b) {
  P[i & 3].a = a;
  P[i & 3].b = b;
  P[(i + 1) & 3].c = (int64_t)a * b;
  return P[i & 3].a + P[i & 3].b + P[(i + 1) & 3].c;
}
int32_t minmax(int32_t a, int32_t b) {
  int32_t m = a < b ? a : b;
  int32_t M = a > b ? a : b;
  uint32_t am = a < 0 ? -(uint32_t)a : (uint32_t)a;
  return m * 3 + M - (int32_t)am;
}
uint32_t bits(uint32_t x) {
  return __builtin_popcount(x) + (x ? __builtin_ctz(x) : 0) + __builtin_bswap32(x) + ((x << 5) | (x >> 27));
}
