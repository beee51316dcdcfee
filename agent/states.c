// SPDX-License-Identifier: GPL-2.0
/*
 * MitigationState messages from kmemctl.ko's sysfs (states.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "states.h"

static const Kmemctl__V1__MitigationStateKind kinds[] = {
	[KERNEL_STATE_UNKNOWN] = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_UNSPECIFIED,
	[KERNEL_STATE_UNSUPPORTED] =
		KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_UNSUPPORTED,
	[KERNEL_STATE_NATIVE] = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_NATIVE,
	[KERNEL_STATE_OFF] = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_OFF,
	[KERNEL_STATE_ON] = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_ON,
	[KERNEL_STATE_TRIPPED] = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_TRIPPED,
	[KERNEL_STATE_TRANSITION] = KMEMCTL__V1__MITIGATION_STATE_KIND__MITIGATION_STATE_TRANSITION,
};

static void to_pb(struct states *s, size_t i, states_source source, void *arg)
{
	struct kernel_mitigation *m = &s->km[i];
	Kmemctl__V1__MitigationState *pb = &s->pb[i];
	size_t j;

	kmemctl__v1__mitigation_state__init(pb);
	pb->id = m->id;
	pb->state = kinds[m->state];
	pb->mode = m->on ? KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_ON :
			   KMEMCTL__V1__MITIGATION_MODE__MITIGATION_MODE_OFF;
	pb->reason = m->reason;
	pb->source = source ? source(m->id, arg) : KMEMCTL__V1__MODE_SOURCE__MODE_SOURCE_DEFAULT;
	for (j = 0; j < m->nparams; j++) {
		kmemctl__v1__mitigation_state__params_entry__init(&s->params[i][j]);
		snprintf(s->values[i][j], sizeof(s->values[i][j]), "%llu",
			 (unsigned long long)m->params[j].value);
		s->params[i][j].key = m->params[j].key;
		s->params[i][j].value = s->values[i][j];
		s->paramsp[i][j] = &s->params[i][j];
	}
	pb->n_params = m->nparams;
	pb->params = s->paramsp[i];
	for (j = 0; j < m->nstats; j++) {
		kmemctl__v1__mitigation_state__stats_entry__init(&s->stats[i][j]);
		s->stats[i][j].key = m->stats[j].key;
		s->stats[i][j].value = m->stats[j].value;
		s->statsp[i][j] = &s->stats[i][j];
	}
	pb->n_stats = m->nstats;
	pb->stats = s->statsp[i];
	s->pbp[i] = pb;
}

int states_collect(const struct rootfs *rfs, struct states *s, states_source source, void *arg)
{
	char ids[KERNEL_MAX_IDS][KERNEL_ID_MAX + 1];
	size_t n, i;
	int r;

	s->n = 0;
	s->unreadable = 0;
	s->nwaiting = 0;
	s->build_file[0] = '\0';
	r = kernel_ids(rfs, "mitigations", ids, KERNEL_MAX_IDS, &n);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		if (kernel_read_mitigation(rfs, ids[i], &s->km[s->n]) < 0) {
			s->unreadable++;
			continue;
		}
		to_pb(s, s->n, source, arg);
		if (s->km[s->n].state == KERNEL_STATE_UNSUPPORTED &&
		    strstr(s->km[s->n].reason, KERNEL_NOT_VERIFIED))
			s->waiting[s->nwaiting++] = s->km[s->n].id;
		s->n++;
	}
	if (s->nwaiting && kernel_build_file(rfs, s->build_file, sizeof(s->build_file)) < 0)
		s->build_file[0] = '\0';
	return (int)s->n;
}
