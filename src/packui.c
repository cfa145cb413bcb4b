// SPDX-License-Identifier: MIT
/*
 * packui: the signal and progress thread of `shardfs pack` (packui.h).
 * The thread sleeps in sigtimedwait() on the blocked signals with a
 * 250 ms timeout: a signal sets `stop`, a timeout redraws the line, and
 * packui_stop() wakes it with SIGUSR2 (also blocked, also waited for).
 */
#include "packui.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR2); /* packui_stop()'s wake-up call */
}

void packui_init(struct packui *ui, bool progress, const char *label)
{
	atomic_init(&ui->stop, 0);
	atomic_init(&ui->phase, PACKUI_SCAN);
	atomic_init(&ui->files_done, 0);
	atomic_init(&ui->bytes_done, 0);
	atomic_init(&ui->files_total, 0);
	atomic_init(&ui->bytes_total, 0);
	atomic_init(&ui->quit, 0);
	ui->label = label;
	ui->progress = progress;
	ui->t0 = now_s();
	ui->running = false;
}

double packui_elapsed(const struct packui *ui)
{
	return now_s() - ui->t0;
}

static void human(uint64_t b, char *out, size_t outlen)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(out, outlen, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void draw(struct packui *ui)
{
	uint64_t fd = atomic_load(&ui->files_done);
	uint64_t ft = atomic_load(&ui->files_total);
	uint64_t bd = atomic_load(&ui->bytes_done);
	uint64_t bt = atomic_load(&ui->bytes_total);
	double el = packui_elapsed(ui), rate = el > 0 ? (double)bd / el : 0;
	int phase = atomic_load(&ui->phase);
	char a[32], b[32], eta[32] = "--:--";

	if (phase == PACKUI_SCAN) {
		printf("\r\033[Kscanning %s ...", ui->label);
		fflush(stdout);
		return;
	}
	human(bd, a, sizeof(a));
	human(bt, b, sizeof(b));
	if (rate > 0 && bt >= bd) {
		uint64_t s = (uint64_t)((double)(bt - bd) / rate);

		snprintf(eta, sizeof(eta), "%" PRIu64 ":%02" PRIu64, s / 60,
			 s % 60);
	}
	printf("\r\033[K%" PRIu64 "/%" PRIu64 " files  %s/%s  %.1f MB/s  "
	       "ETA %s%s",
	       fd, ft, a, b, rate / 1e6, eta,
	       phase == PACKUI_INDEX ? "  (writing the index)" : "");
	fflush(stdout);
}

/* A second signal: stop now, the default way. */
static void die_by(int sig)
{
	sigset_t one;

	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
}

static void *ui_main(void *arg)
{
	struct packui *ui = arg;
	sigset_t set;

	signals(&set);
	while (!atomic_load(&ui->quit)) {
		struct timespec ts = {0, 250 * 1000000L};
		int sig = sigtimedwait(&set, NULL, &ts);

		if (sig == SIGUSR2)
			continue;
		if (sig > 0 && atomic_load(&ui->stop))
			die_by(sig);
		if (sig > 0) {
			atomic_store(&ui->stop, sig);
			if (!ui->progress)
				fprintf(stderr, "shardfs pack: stopping "
						"(aborting uploads in "
						"progress)...\n");
		} else if (ui->progress) {
			draw(ui);
		}
	}
	return NULL;
}

int packui_start(struct packui *ui)
{
	sigset_t set;
	int rc;

	signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = pthread_create(&ui->thread, NULL, ui_main, ui);
	if (rc)
		return -rc;
	ui->running = true;
	return 0;
}

void packui_stop(struct packui *ui)
{
	if (!ui->running)
		return;
	atomic_store(&ui->quit, 1);
	pthread_kill(ui->thread, SIGUSR2);
	pthread_join(ui->thread, NULL);
	ui->running = false;
	if (ui->progress) {
		draw(ui);
		printf("\n");
	}
}
