/* x86_decode.h's functions, exported for syscost's unit tests: the plugin's own decoding,
 * tested on the bytes of every form it must know (src/counters/decode.rs). */
#include "x86_decode.h"

bool syscost_locked(const unsigned char *d, size_t n) { return locked(d, n); }
bool syscost_branch(const unsigned char *d, size_t n) { return branch(d, n); }
bool syscost_conditional(const unsigned char *d, size_t n) { return conditional(d, n); }
bool syscost_iretq(const unsigned char *d, size_t n) { return iretq(d, n); }
int syscost_mark_of(const unsigned char *d, size_t n) { return mark_of(d, n); }
