/* What every part of the agent uses: the one way it stops on an error, and memory that is
 * never NULL. */
#include "agent.h"

#include <stdarg.h>
#include <stdlib.h>

/* One line on stderr naming the problem and its fix, then exit 2, as oscost's own errors. */
void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "oscost-agent: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        fail("out of memory (%zu bytes): free some memory or run a smaller size (--quick)", n);
    return p;
}
