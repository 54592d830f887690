/* Turn-taking with oscost, sample by sample, for the side-by-side harness's alternation
 * (`cargo xtask vs NAME --alternate`), the same protocol as oscost's sampler: when OSCOST_PACE
 * names two FIFOs, GO:DONE, each pace_turn() writes one byte to DONE (the other side may run)
 * and waits for one byte on GO (this side's turn). The conductor grants turns to the two sides
 * alternately, so a drift of the machine touches both alike. Unset, pace_turn() does nothing.
 * Call it before each calibration and before each timed sample. */
#ifndef OSCOST_BENCH_PACE_H
#define OSCOST_BENCH_PACE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int pace_go = -2, pace_done = -1;

static void pace_turn(void) {
    if (pace_go == -2) {
        const char *spec = getenv("OSCOST_PACE");
        pace_go = -1;
        if (!spec) return;
        char go[4096];
        const char *colon = strchr(spec, ':');
        if (!colon || (size_t)(colon - spec) >= sizeof go) {
            fprintf(stderr, "OSCOST_PACE=%s is not two FIFOs as GO:DONE\n", spec);
            exit(2);
        }
        memcpy(go, spec, (size_t)(colon - spec));
        go[colon - spec] = 0;
        pace_go = open(go, O_RDONLY | O_CLOEXEC);
        pace_done = open(colon + 1, O_WRONLY | O_CLOEXEC);
        if (pace_go < 0 || pace_done < 0) {
            perror("OSCOST_PACE: open");
            exit(2);
        }
    }
    if (pace_go < 0) return;
    char byte = 'd';
    if (write(pace_done, &byte, 1) != 1 || read(pace_go, &byte, 1) != 1) {
        fprintf(stderr, "OSCOST_PACE: the conductor went away\n");
        exit(2);
    }
}

#endif
