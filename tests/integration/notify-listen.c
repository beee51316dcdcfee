// SPDX-License-Identifier: GPL-2.0
/*
 * notify-listen SOCKET SECONDS: stands in for systemd's notification
 * socket. Binds a datagram socket at SOCKET and prints each message it
 * gets, one line per assignment, until SECONDS seconds after READY=1 (or
 * a minute without it): what comes after READY is then counted over the
 * same time however long a busy machine takes to start the daemon.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timespec end, now;
	char buf[4096];
	ssize_t n;
	int fd, ready = 0;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: notify-listen SOCKET SECONDS\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	unlink(argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("notify-listen");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 60;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		if (poll(&p, 1, 100) != 1)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		printf("%s%s", buf, buf[n - 1] == '\n' ? "" : "\n");
		fflush(stdout);
		if (!ready && (!strncmp(buf, "READY=1", 7) || strstr(buf, "\nREADY=1"))) {
			ready = 1;
			clock_gettime(CLOCK_MONOTONIC, &end);
			end.tv_sec += atoi(argv[2]);
		}
	}
	unlink(argv[1]);
	return 0;
}
