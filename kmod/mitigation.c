// SPDX-License-Identifier: GPL-2.0
/*
 * Mitigations: the descriptor table, gating on the running kernel, and the
 * mitigations/<id>/ sysfs directories.
 *
 * Gates are checked in order, and the first that fails is the reason:
 * Kconfig (the kernel cannot have the bug, or lacks what the fix needs),
 * the upstream fix already present (native, decided from the kernel's own
 * headers, code or behaviour by native.c), an implementation in this build
 * for this kernel, the symbols that implementation needs, and a build
 * record that verifies the kernel functions its copies stand in for
 * (verify.c). A
 * gated mitigation still has its directory, so every id is visible on
 * every kernel.
 *
 * Livepatched mitigations are on only once livepatch has switched every
 * task: until then their state is "transition", and the reason says how
 * long it has taken and which task holds it up.
 *
 * The breaker (breaker.c) is armed while the mode is on; when it trips a
 * mitigation, kmem_mitigation_trip() turns it off and leaves it "tripped"
 * until "1" is written to reset.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/utsname.h>

#include "compat.h"
#include "kmem.h"

/* A mitigation's param, from the interface's description (uapi/kmemctl.h). */
struct kmem_param {
	enum kmemctl_mitigation mitigation;
	const char *key;
	u64 def, min, max;
};

#define PARAM_ROW(mit, param, k, d, lo, hi)				\
	[KMEMCTL_PARAM_##mit##_##param] = {				\
		.mitigation = KMEMCTL_MIT_##mit, .key = k,		\
		.def = d, .min = lo, .max = hi,				\
	},
static const struct kmem_param params[KMEMCTL_PARAM_COUNT] = {
	KMEMCTL_PARAMS(PARAM_ROW)
};

/*
 * Every mitigation's param values, indexed like params[], each under its
 * mitigation's lock; its fix reads them at any time.
 */
static u64 param_values[KMEMCTL_PARAM_COUNT];

/* In the order of their enums, which the same lists make. */
#define STATE_NAME(e, name) name,
static const char *const state_names[] = {
	KMEMCTL_STATES(STATE_NAME)
};

#define MIT_NAME(e, name) name,
static const char *const mitigation_names[] = {
	KMEMCTL_MITIGATIONS(MIT_NAME)
};

static const char *const mode_names[] = { "off", "on" };

struct kmem_mitigation {
	const char *name;
	const char *kconfig_missing;
	/* the upstream fix is in this kernel (native.c), or NULL: there is none */
	bool (*native)(char *reason, size_t len);
	/* what enacts it on this kernel: a livepatch, a direct call, or neither */
	const struct kmem_lp_fix *fix;
	const struct kmem_direct_fix *direct;
	enum kmemctl_mitigation id;

	struct mutex lock;	/* state, mode, its param_values, counters */
	enum kmemctl_state state;
	bool on;
	u64 enables, disables, trips, resets;
	/* unsupported for want of a record: re-gated when one is admitted */
	bool awaiting_record;
	char reason[256];
	struct kmem_node *node;
};

static struct kmem_mitigation mitigations[KMEMCTL_MIT_COUNT] = {
	[KMEMCTL_MIT_KASAN_FLUSH_BATCH] = {
#ifndef CONFIG_KASAN_VMALLOC
		.kconfig_missing = "CONFIG_KASAN_VMALLOC is not set",
#endif
		.native = kmem_native_kasan_flush_batch,
#ifdef HAVE_LP_KASAN_PURGE
		.fix = &kmem_lp_kasan_purge,
#endif
	},
	[KMEMCTL_MIT_TLB_GEN] = {
#ifndef CONFIG_X86
		.kconfig_missing = "CONFIG_X86 is not set",
#endif
		.native = kmem_native_tlb_gen,
	},
	[KMEMCTL_MIT_RSTAT_YIELD] = {
#ifndef CONFIG_LIVEPATCH
		.kconfig_missing = "CONFIG_LIVEPATCH is not set",
#endif
		.native = kmem_native_rstat_yield,
#ifdef HAVE_LP_RSTAT
		.fix = &kmem_lp_rstat,
#endif
	},
	[KMEMCTL_MIT_USERCOPY_FASTPATH] = {
#if !defined(CONFIG_HARDENED_USERCOPY)
		.kconfig_missing = "CONFIG_HARDENED_USERCOPY is not set",
#elif !defined(CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS)
		.kconfig_missing = "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS is not set",
#endif
#ifdef HAVE_USERCOPY_FASTPATH
		.direct = &kmem_usercopy_fastpath,
#endif
	},
	[KMEMCTL_MIT_KASAN_QUARANTINE] = {
#ifndef CONFIG_KASAN_GENERIC
		.kconfig_missing = "CONFIG_KASAN_GENERIC is not set",
#endif
#ifdef HAVE_KASAN_QUARANTINE
		.direct = &kmem_kasan_quarantine,
#endif
	},
};

static struct kobject *mitigations_kobj;
/* a direct fix has been on: unload waits for tasks that may still be inside */
static bool direct_used;

/*
 * The verification gate and the fix's setup after it; again whenever a
 * record is admitted, while no record has verified m yet.
 */
static void mitigation_admit(struct kmem_mitigation *m)
{
	int ret;

	m->state = KMEMCTL_STATE_UNSUPPORTED;
	m->awaiting_record = true;
	if (!kmem_verify_check(m->id, m->reason, sizeof(m->reason)))
		return;
	ret = m->fix ? kmem_livepatch_add(m->fix) : m->direct->prepare();
	if (ret == -EBUSY) {
		snprintf(m->reason, sizeof(m->reason),
			 "unsupported: verified, but the livepatch in place was built without it: write the record again once every livepatched mitigation is off");
		return;
	}
	m->awaiting_record = false;
	if (ret) {
		snprintf(m->reason, sizeof(m->reason), "unsupported: %s setup failed (%d)",
			 m->fix ? "livepatch" : "direct call", ret);
		return;
	}
	m->state = KMEMCTL_STATE_OFF;
}

static void mitigation_gate(struct kmem_mitigation *m)
{
	char native[200];
	const char *sym;

	m->state = KMEMCTL_STATE_UNSUPPORTED;
	if (m->kconfig_missing) {
		snprintf(m->reason, sizeof(m->reason), "unsupported: %s", m->kconfig_missing);
		return;
	}
	if (m->native && m->native(native, sizeof(native))) {
		m->state = KMEMCTL_STATE_NATIVE;
		snprintf(m->reason, sizeof(m->reason), "native: %s", native);
		return;
	}
	if (!m->fix && !m->direct) {
		snprintf(m->reason, sizeof(m->reason),
			 "unsupported: kmemctl %s has no implementation for %s",
			 KMEMCTL_MODULE_VERSION, init_utsname()->release);
		return;
	}
	sym = kmem_symbols_check(m->fix ? m->fix->symbols : m->direct->symbols, m->name);
	if (sym) {
		snprintf(m->reason, sizeof(m->reason), "unsupported: symbol %s not found", sym);
	} else {
		kmem_verify_measure(m->id, m->fix ? m->fix->targets : m->direct->targets);
		mitigation_admit(m);
	}
}

static struct kmem_mitigation *to_mitigation(struct kobject *kobj)
{
	return kmem_node_owner(kobj);
}

/*
 * The state as it stands: a livepatched mitigation switched on is in
 * transition until livepatch has switched every task, and one switched off
 * says when the patch's removal is still under way.
 */
static enum kmemctl_state current_state(struct kmem_mitigation *m, char *reason, size_t len)
{
	struct kmem_lp_status st;
	const char *what;

	strscpy(reason, m->reason, len);
	if (!m->fix || (m->state != KMEMCTL_STATE_ON && m->state != KMEMCTL_STATE_OFF))
		return m->state;
	kmem_livepatch_status(&st);
	if (!st.busy || st.patching != m->on)
		return m->state;
	what = m->on ? "livepatch switching tasks" : "off: livepatch removal";
	if (st.stalled && !st.waiting)
		snprintf(reason, len,
			 "%s%s stalled for %llu ms: all tasks switched, waiting for RCU tasks",
			 m->on ? "transition: " : "", what, st.busy_ms);
	else if (st.stalled)
		snprintf(reason, len,
			 "%s%s stalled for %llu ms: %u tasks not switched, first %s:%d",
			 m->on ? "transition: " : "", what, st.busy_ms, st.waiting, st.comm,
			 st.pid);
	else
		snprintf(reason, len, "%s%s under way for %llu ms", m->on ? "transition: " : "",
			 what, st.busy_ms);
	return m->on ? KMEMCTL_STATE_TRANSITION : KMEMCTL_STATE_OFF;
}

enum text_field { TEXT_STATE, TEXT_REASON, TEXT_MODE };

static ssize_t text_show(struct kobject *kobj, char *buf, enum text_field field)
{
	struct kmem_mitigation *m = to_mitigation(kobj);
	char reason[sizeof(m->reason)];
	enum kmemctl_state state;
	ssize_t len;

	mutex_lock(&m->lock);
	state = current_state(m, reason, sizeof(reason));
	if (field == TEXT_STATE)
		len = sysfs_emit(buf, "%s\n", state_names[state]);
	else if (field == TEXT_REASON)
		len = sysfs_emit(buf, "%s\n", reason);
	else
		len = sysfs_emit(buf, "%s\n", mode_names[m->on]);
	mutex_unlock(&m->lock);
	return len;
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return text_show(kobj, buf, TEXT_STATE);
}

static ssize_t reason_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return text_show(kobj, buf, TEXT_REASON);
}

static ssize_t mode_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return text_show(kobj, buf, TEXT_MODE);
}

/* trip_call_ms, for a mitigation with a replacement; 0 otherwise. */
static u64 trip_call_ms(struct kmem_mitigation *m)
{
	int i;

	for (i = 0; i < KMEMCTL_PARAM_COUNT; i++)
		if (params[i].mitigation == m->id && !strcmp(params[i].key, "trip_call_ms"))
			return param_values[i];
	return 0;
}

/* Enacts on or off; the caller updates state, reason and counters. */
static int mitigation_switch(struct kmem_mitigation *m, bool on)
{
	int ret = 0;

	if (on)
		kmem_breaker_arm(m->id, trip_call_ms(m));
	else
		kmem_breaker_disarm(m->id);
	if (m->direct && on) {
		/* the module stays while the kernel may enter it */
		if (!try_module_get(THIS_MODULE))
			ret = -ENODEV;
		else
			ret = m->direct->enable(param_values);
		if (!ret)
			direct_used = true;
		else if (ret != -ENODEV)
			module_put(THIS_MODULE);
	} else if (m->direct) {
		ret = m->direct->disable();
		if (!ret)
			module_put(THIS_MODULE);
	} else if (on) {
		ret = kmem_livepatch_get(m->id);
		if (!ret)
			m->fix->set(true, param_values);
	} else {
		m->fix->set(false, param_values);
		kmem_livepatch_put(m->id);
	}
	if (ret && on)
		kmem_breaker_disarm(m->id);
	else if (ret)
		kmem_breaker_arm(m->id, trip_call_ms(m));
	return ret;
}

static int mitigation_set(struct kmem_mitigation *m, bool on)
{
	int ret;

	if (on == m->on)
		return 0;
	if (m->state == KMEMCTL_STATE_UNSUPPORTED || m->state == KMEMCTL_STATE_NATIVE) {
		pr_info("%s: mode on refused: %s\n", m->name, m->reason);
		return -EOPNOTSUPP;
	}
	if (m->state == KMEMCTL_STATE_TRIPPED) {
		pr_info("%s: mode on refused: %s; write 1 to reset first\n", m->name, m->reason);
		return -EBUSY;
	}
	ret = mitigation_switch(m, on);
	if (ret) {
		pr_warn("%s: mode %s failed (%d)\n", m->name, mode_names[on], ret);
		return ret;
	}
	pr_info("%s: mode %s -> %s\n", m->name, mode_names[m->on], mode_names[on]);
	m->on = on;
	m->state = on ? KMEMCTL_STATE_ON : KMEMCTL_STATE_OFF;
	snprintf(m->reason, sizeof(m->reason), "%s: %s", state_names[m->state],
		 on ? "enacted" : "supported on this kernel");
	if (on)
		m->enables++;
	else
		m->disables++;
	return 0;
}

/*
 * The breaker's verdict. The record and the log line go first: if the
 * switch-off waits on the very task that is stuck, the agent still hears.
 */
void kmem_mitigation_trip(enum kmemctl_mitigation id, const struct kmem_trip *trip)
{
	struct kmem_mitigation *m = &mitigations[id];
	int ret;

	mutex_lock(&m->lock);
	if (!m->on)
		goto out;
	pr_warn("%s: %s\n", m->name, trip->reason);
	kmem_event_queue_task(KMEMCTL_EV_TRIP, id, trip->value, trip->threshold, trip->cause,
			      trip->pid, trip->comm);
	m->trips++;
	ret = mitigation_switch(m, false);
	if (ret) {
		pr_err("%s: turning it off failed (%d); it stays on\n", m->name, ret);
		snprintf(m->reason, sizeof(m->reason), "on: %s, but turning it off failed (%d)",
			 trip->reason, ret);
		goto out;
	}
	m->on = false;
	m->state = KMEMCTL_STATE_TRIPPED;
	strscpy(m->reason, trip->reason, sizeof(m->reason));
out:
	mutex_unlock(&m->lock);
}

bool kmem_mitigation_livepatched(enum kmemctl_mitigation id)
{
	return mitigations[id].fix;
}

/* Also before kmem_mitigations_init(): verify.c parses the shipped records first. */
const char *kmem_mitigation_name(enum kmemctl_mitigation id)
{
	return mitigation_names[id];
}

static ssize_t mode_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	struct kmem_mitigation *m = to_mitigation(kobj);
	int mode, ret;

	mode = sysfs_match_string(mode_names, buf);
	if (mode < 0) {
		pr_info("%s: mode: want \"off\" or \"on\"\n", m->name);
		return -EINVAL;
	}
	mutex_lock(&m->lock);
	ret = mitigation_set(m, mode);
	mutex_unlock(&m->lock);
	return ret ? ret : count;
}

static ssize_t params_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct kmem_mitigation *m = to_mitigation(kobj);
	ssize_t len = 0;
	int i;

	mutex_lock(&m->lock);
	for (i = 0; i < KMEMCTL_PARAM_COUNT; i++)
		if (params[i].mitigation == m->id)
			len += sysfs_emit_at(buf, len, "%s=%llu\n", params[i].key,
					     param_values[i]);
	mutex_unlock(&m->lock);
	return len;
}

/* Parses one "key=value" token into values[]; logs why when it cannot. */
static int param_parse(struct kmem_mitigation *m, char *token, u64 *values)
{
	char *value = strchr(token, '=');
	u64 v;
	int i;

	if (!value) {
		pr_info("%s: params: \"%s\" is not key=value\n", m->name, token);
		return -EINVAL;
	}
	*value++ = '\0';
	for (i = 0; i < KMEMCTL_PARAM_COUNT; i++)
		if (params[i].mitigation == m->id && !strcmp(params[i].key, token))
			break;
	if (i == KMEMCTL_PARAM_COUNT) {
		pr_info("%s: params: unknown key \"%s\"\n", m->name, token);
		return -EINVAL;
	}
	if (kstrtou64(value, 0, &v) || v < params[i].min || v > params[i].max) {
		pr_info("%s: params: %s=\"%s\" is not a number in [%llu, %llu]\n", m->name,
			token, value, params[i].min, params[i].max);
		return -EINVAL;
	}
	values[i] = v;
	return 0;
}

static int params_parse(struct kmem_mitigation *m, char *text, u64 *values)
{
	char *token;
	int n = 0, ret;

	while ((token = strsep(&text, " \t\n"))) {
		if (!*token)
			continue;
		ret = param_parse(m, token, values);
		if (ret)
			return ret;
		n++;
	}
	if (!n) {
		pr_info("%s: params: no key=value given\n", m->name);
		return -EINVAL;
	}
	return 0;
}

static void params_log(struct kmem_mitigation *m, const u64 *old)
{
	int i;

	for (i = 0; i < KMEMCTL_PARAM_COUNT; i++)
		if (params[i].mitigation == m->id && old[i] != param_values[i])
			pr_info("%s: params: %s %llu -> %llu\n", m->name, params[i].key,
				old[i], param_values[i]);
}

static ssize_t params_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	struct kmem_mitigation *m = to_mitigation(kobj);
	u64 values[KMEMCTL_PARAM_COUNT], old[KMEMCTL_PARAM_COUNT];
	char *text;
	int i, ret;

	text = kstrndup(buf, count, GFP_KERNEL);
	if (!text)
		return -ENOMEM;
	mutex_lock(&m->lock);
	memcpy(values, param_values, sizeof(values));
	ret = params_parse(m, text, values);
	if (!ret) {
		memcpy(old, param_values, sizeof(old));
		for (i = 0; i < KMEMCTL_PARAM_COUNT; i++)
			if (params[i].mitigation == m->id)
				WRITE_ONCE(param_values[i], values[i]);
		params_log(m, old);
		kmem_breaker_set_limit(m->id, trip_call_ms(m));
	}
	mutex_unlock(&m->lock);
	kfree(text);
	return ret ? ret : count;
}

static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct kmem_mitigation *m = to_mitigation(kobj);
	ssize_t len;

	mutex_lock(&m->lock);
	len = sysfs_emit(buf, "enables %llu\ndisables %llu\ntrips %llu\nresets %llu\n", m->enables,
			 m->disables, m->trips, m->resets);
	/* the longest running time of one timed call since mode on, for sizing trip_call_ms */
	if (trip_call_ms(m))
		len += sysfs_emit_at(buf, len, "call_max_us %llu\n",
				     div_u64(READ_ONCE(kmem_call_max[m->id]), NSEC_PER_USEC));
	if (m->direct && m->direct->stats && m->state != KMEMCTL_STATE_UNSUPPORTED)
		len = m->direct->stats(buf, len);
	mutex_unlock(&m->lock);
	return len;
}

/* "1": a tripped mitigation goes back to off, and may be turned on again. */
static ssize_t reset_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	struct kmem_mitigation *m = to_mitigation(kobj);

	if (!sysfs_streq(buf, "1")) {
		pr_info("%s: reset: want \"1\"\n", m->name);
		return -EINVAL;
	}
	mutex_lock(&m->lock);
	if (m->state == KMEMCTL_STATE_TRIPPED) {
		pr_info("%s: reset after %s\n", m->name, m->reason);
		m->state = KMEMCTL_STATE_OFF;
		snprintf(m->reason, sizeof(m->reason), "off: reset after a trip");
		m->resets++;
	}
	mutex_unlock(&m->lock);
	return count;
}

static struct kobj_attribute state_attr = __ATTR_RO(state);
static struct kobj_attribute reason_attr = __ATTR_RO(reason);
static struct kobj_attribute mode_attr = __ATTR_RW_MODE(mode, 0644);
static struct kobj_attribute params_attr = __ATTR_RW_MODE(params, 0644);
static struct kobj_attribute stats_attr = __ATTR_RO(stats);
static struct kobj_attribute reset_attr = __ATTR_WO(reset);

static struct attribute *mitigation_attrs[] = {
	&state_attr.attr,
	&reason_attr.attr,
	&mode_attr.attr,
	&params_attr.attr,
	&stats_attr.attr,
	&reset_attr.attr,
	NULL,
};

static const struct attribute_group mitigation_group = {
	.attrs = mitigation_attrs,
};

static void mitigation_free(struct kmem_mitigation *m)
{
	kmem_node_destroy(m->node);
	m->node = NULL;
	mutex_lock(&m->lock);
	if (m->on)
		mitigation_set(m, false);
	mutex_unlock(&m->lock);
}

static int mitigation_setup(struct kmem_mitigation *m)
{
	int i;

	mutex_init(&m->lock);
	for (i = 0; i < KMEMCTL_PARAM_COUNT; i++)
		if (params[i].mitigation == m->id)
			param_values[i] = params[i].def;
	mitigation_gate(m);
	pr_info("%s: %s\n", m->name, m->reason);
	m->node = kmem_node_create(m->name, mitigations_kobj, m, &mitigation_group);
	if (IS_ERR(m->node)) {
		int ret = PTR_ERR(m->node);

		m->node = NULL;
		return ret;
	}
	return 0;
}

int kmem_mitigations_init(struct kobject *parent)
{
	int i, ret;

	mitigations_kobj = kobject_create_and_add("mitigations", parent);
	if (!mitigations_kobj)
		return -ENOMEM;
	for (i = 0; i < KMEMCTL_MIT_COUNT; i++) {
		mitigations[i].id = i;
		mitigations[i].name = mitigation_names[i];
		ret = mitigation_setup(&mitigations[i]);
		if (ret)
			goto err_mitigations;
	}
	return 0;

err_mitigations:
	for (; i >= 0; i--)
		mitigation_free(&mitigations[i]);
	kobject_put(mitigations_kobj);
	return ret;
}

/* sysfs goes first, so no write races the final switch-off. */
void kmem_mitigations_exit(void)
{
	int i;

	for (i = 0; i < KMEMCTL_MIT_COUNT; i++)
		mitigation_free(&mitigations[i]);
	kobject_put(mitigations_kobj);
	/*
	 * A task preempted inside a replacement after its redirect went
	 * away still runs module text; it is out once it has switched out
	 * voluntarily or run in user space.
	 */
	if (direct_used)
		synchronize_rcu_tasks();
}

/* A record was admitted: the mitigations waiting for one try their gate again. */
void kmem_mitigations_regate(void)
{
	char old[sizeof(mitigations[0].reason)];
	struct kmem_mitigation *m;

	for (m = mitigations; m < mitigations + KMEMCTL_MIT_COUNT; m++) {
		mutex_lock(&m->lock);
		if (m->state == KMEMCTL_STATE_UNSUPPORTED && m->awaiting_record) {
			strscpy(old, m->reason, sizeof(old));
			mitigation_admit(m);
			if (strcmp(old, m->reason))
				pr_info("%s: %s\n", m->name, m->reason);
		}
		mutex_unlock(&m->lock);
	}
}
