// SPDX-License-Identifier: GPL-2.0
/*
 * Probe framework: per-CPU log2 histograms, thresholds feeding
 * /dev/kmemctl, and the probes/<id>/ sysfs directories. The probe families
 * (probe_*.c) only attach handlers and call kmem_probe_record().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>

#include "kmem.h"

static struct kmem_probe *const probes[KMEMCTL_PROBE_COUNT] = {
	[KMEMCTL_PROBE_RSTAT_FLUSH] = &kmem_probe_rstat_flush,
	[KMEMCTL_PROBE_USERCOPY_VMALLOC] = &kmem_probe_usercopy_vmalloc,
	[KMEMCTL_PROBE_VMAP_PURGE] = &kmem_probe_vmap_purge,
	[KMEMCTL_PROBE_KASAN_REDUCE] = &kmem_probe_kasan_reduce,
	[KMEMCTL_PROBE_TLB_SHOOTDOWN] = &kmem_probe_tlb_shootdown,
};

/* In the order of enum kmemctl_probe, which the same list makes. */
#define PROBE_NAME(e, id, second) id,
static const char *const probe_names[] = {
	KMEMCTL_PROBES(PROBE_NAME)
};

#define PROBE_SECOND(e, id, second) second,
static const char *const probe_seconds[] = {
	KMEMCTL_PROBES(PROBE_SECOND)
};

static struct kobject *probes_kobj;

/* The same buckets as userspace lib/hist.c: 2^(b-1) < v <= 2^b. */
static unsigned int hist_bucket(u64 v)
{
	unsigned int b = v <= 1 ? 0 : fls64(v - 1);

	return min_t(unsigned int, b, KMEM_HIST_BUCKETS - 1);
}

/*
 * this_cpu ops are irq-safe single instructions on x86, so a handler
 * interrupted by another handler on the same CPU loses no update.
 */
static void hist_record(struct kmem_hist __percpu *h, u64 v)
{
	u64 old, prev;

	this_cpu_inc(h->buckets[hist_bucket(v)]);
	this_cpu_inc(h->count);
	this_cpu_add(h->sum, v);
	old = this_cpu_read(h->max);
	while (v > old) {
		prev = this_cpu_cmpxchg(h->max, old, v);
		if (prev == old)
			break;
		old = prev;
	}
}

void kmem_probe_record(struct kmem_probe *probe, u64 value)
{
	u64 threshold = READ_ONCE(probe->threshold_ns);

	hist_record(probe->hist, value);
	if (threshold && value > threshold)
		kmem_event_queue(KMEMCTL_EV_THRESHOLD, probe->id, value, threshold);
}

void kmem_probe_record2(struct kmem_probe *probe, u64 value)
{
	hist_record(probe->hist2, value);
}

/* Probe descriptors are reset so they can be registered again after a disable. */
void kmem_kprobe_init(struct kprobe *kp, const char *symbol, kprobe_pre_handler_t pre)
{
	memset(kp, 0, sizeof(*kp));
	kp->symbol_name = symbol;
	kp->pre_handler = pre;
}

void kmem_kretprobe_init(struct kretprobe *rp, const char *symbol,
			 kretprobe_handler_t entry, kretprobe_handler_t ret, size_t data_size)
{
	memset(rp, 0, sizeof(*rp));
	rp->kp.symbol_name = symbol;
	rp->entry_handler = entry;
	rp->handler = ret;
	rp->data_size = data_size;
	rp->maxactive = max_t(int, 2 * num_possible_cpus(), 20);
}

/* Registers the kprobes, then the kretprobe; all or nothing. */
int kmem_probe_attach(struct kprobe **kps, int num, struct kretprobe *rp)
{
	int ret;

	ret = register_kprobes(kps, num);
	if (ret)
		return ret;
	ret = register_kretprobe(rp);
	if (ret)
		unregister_kprobes(kps, num);
	return ret;
}

/*
 * The kprobes go first: once the kretprobe is gone, instances in flight
 * return without their handler, and kprobe handlers must not find their
 * data any more.
 */
void kmem_probe_detach(struct kprobe **kps, int num, struct kretprobe *rp)
{
	unregister_kprobes(kps, num);
	unregister_kretprobe(rp);
}

struct timed_data {
	u64 start;
};

static int timed_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	((struct timed_data *)ri->data)->start = ktime_get_mono_fast_ns();
	return 0;
}

static int timed_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kmem_probe *probe = container_of(get_kretprobe(ri), struct kmem_probe, rp);
	u64 start = ((struct timed_data *)ri->data)->start;

	kmem_probe_record(probe, ktime_get_mono_fast_ns() - start);
	return 0;
}

/* Probes that time each call of one function share these hooks. */
int kmem_probe_timed_enable(struct kmem_probe *probe)
{
	kmem_kretprobe_init(&probe->rp, probe->timed, timed_entry, timed_ret,
			    sizeof(struct timed_data));
	return register_kretprobe(&probe->rp);
}

void kmem_probe_timed_disable(struct kmem_probe *probe)
{
	unregister_kretprobe(&probe->rp);
}

unsigned long kmem_probe_timed_missed(struct kmem_probe *probe)
{
	return probe->rp.nmissed + probe->rp.kp.nmissed;
}

static void hist_sum(struct kmem_hist __percpu *h, struct kmem_hist *out)
{
	int cpu, b;

	memset(out, 0, sizeof(*out));
	for_each_possible_cpu(cpu) {
		struct kmem_hist *c = per_cpu_ptr(h, cpu);

		for (b = 0; b < KMEM_HIST_BUCKETS; b++)
			out->buckets[b] += READ_ONCE(c->buckets[b]);
		out->count += READ_ONCE(c->count);
		out->sum += READ_ONCE(c->sum);
		out->max = max(out->max, READ_ONCE(c->max));
	}
}

/* Not atomic against samples racing on other CPUs; they land before or after. */
static void hist_reset(struct kmem_hist __percpu *h)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(h, cpu), 0, sizeof(struct kmem_hist));
}

static ssize_t hist_show_text(struct kmem_hist __percpu *h, char *buf)
{
	struct kmem_hist *sum;
	ssize_t len = 0;
	int b;

	sum = kmalloc(sizeof(*sum), GFP_KERNEL);
	if (!sum)
		return -ENOMEM;
	hist_sum(h, sum);
	for (b = 0; b < KMEM_HIST_BUCKETS; b++)
		if (sum->buckets[b])
			len += sysfs_emit_at(buf, len, "%llu %llu\n", 1ULL << b, sum->buckets[b]);
	kfree(sum);
	return len;
}

static ssize_t hist_show_field(struct kmem_hist __percpu *h, char *buf, size_t offset)
{
	struct kmem_hist *sum;
	u64 v;

	sum = kmalloc(sizeof(*sum), GFP_KERNEL);
	if (!sum)
		return -ENOMEM;
	hist_sum(h, sum);
	v = *(u64 *)((char *)sum + offset);
	kfree(sum);
	return sysfs_emit(buf, "%llu\n", v);
}

static struct kmem_probe *to_probe(struct kobject *kobj)
{
	return kmem_node_owner(kobj);
}

static ssize_t enabled_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(to_probe(kobj)->enabled));
}

static int probe_set_enabled(struct kmem_probe *probe, bool on)
{
	int ret = 0;

	mutex_lock(&probe->lock);
	if (on && probe->reason[0]) {
		ret = -EOPNOTSUPP;
	} else if (on && !probe->enabled) {
		ret = probe->enable(probe);
		if (ret)
			pr_warn("probe %s: enable failed (%d)\n", probe->name, ret);
		else
			WRITE_ONCE(probe->enabled, true);
	} else if (!on && probe->enabled) {
		probe->disable(probe);
		WRITE_ONCE(probe->enabled, false);
	}
	mutex_unlock(&probe->lock);
	return ret;
}

/*
 * Kprobes on one address run newest first, and one whose handler moves the
 * ip ends the chain; a fix that adds such a probe calls this afterwards.
 */
void kmem_probe_reattach(struct kmem_probe *probe)
{
	int ret;

	mutex_lock(&probe->lock);
	if (probe->enabled) {
		probe->disable(probe);
		ret = probe->enable(probe);
		if (ret) {
			pr_warn("probe %s: enable failed (%d)\n", probe->name, ret);
			WRITE_ONCE(probe->enabled, false);
		}
	}
	mutex_unlock(&probe->lock);
}

static ssize_t enabled_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	bool on;
	int ret;

	ret = kstrtobool(buf, &on);
	if (ret)
		return ret;
	ret = probe_set_enabled(to_probe(kobj), on);
	return ret ? ret : count;
}

static ssize_t reason_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct kmem_probe *probe = to_probe(kobj);

	return sysfs_emit(buf, "%s\n", probe->reason[0] ? probe->reason : "ok");
}

static ssize_t hist_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return hist_show_text(to_probe(kobj)->hist, buf);
}

static ssize_t count_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return hist_show_field(to_probe(kobj)->hist, buf, offsetof(struct kmem_hist, count));
}

static ssize_t sum_ns_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return hist_show_field(to_probe(kobj)->hist, buf, offsetof(struct kmem_hist, sum));
}

static ssize_t max_ns_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return hist_show_field(to_probe(kobj)->hist, buf, offsetof(struct kmem_hist, max));
}

static ssize_t missed_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct kmem_probe *probe = to_probe(kobj);
	unsigned long missed = 0;

	mutex_lock(&probe->lock);
	if (probe->enabled && probe->missed)
		missed = probe->missed(probe);
	mutex_unlock(&probe->lock);
	return sysfs_emit(buf, "%lu\n", missed);
}

static ssize_t threshold_ns_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(to_probe(kobj)->threshold_ns));
}

static ssize_t threshold_ns_store(struct kobject *kobj, struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	u64 v;
	int ret;

	ret = kstrtou64(buf, 0, &v);
	if (ret)
		return ret;
	WRITE_ONCE(to_probe(kobj)->threshold_ns, v);
	return count;
}

static ssize_t reset_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	struct kmem_probe *probe = to_probe(kobj);
	bool yes;
	int ret;

	ret = kstrtobool(buf, &yes);
	if (ret)
		return ret;
	if (!yes)
		return -EINVAL;
	hist_reset(probe->hist);
	if (probe->hist2)
		hist_reset(probe->hist2);
	return count;
}

static ssize_t second_hist_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return hist_show_text(to_probe(kobj)->hist2, buf);
}

static ssize_t second_max_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return hist_show_field(to_probe(kobj)->hist2, buf, offsetof(struct kmem_hist, max));
}

static struct kobj_attribute enabled_attr = __ATTR_RW_MODE(enabled, 0644);
static struct kobj_attribute reason_attr = __ATTR_RO(reason);
static struct kobj_attribute hist_attr = __ATTR_RO(hist);
static struct kobj_attribute count_attr = __ATTR_RO(count);
static struct kobj_attribute sum_ns_attr = __ATTR_RO(sum_ns);
static struct kobj_attribute max_ns_attr = __ATTR_RO(max_ns);
static struct kobj_attribute missed_attr = __ATTR_RO(missed);
static struct kobj_attribute threshold_ns_attr = __ATTR_RW_MODE(threshold_ns, 0644);
static struct kobj_attribute reset_attr = __ATTR_WO(reset);

static struct attribute *probe_attrs[] = {
	&enabled_attr.attr,
	&reason_attr.attr,
	&hist_attr.attr,
	&count_attr.attr,
	&sum_ns_attr.attr,
	&max_ns_attr.attr,
	&missed_attr.attr,
	&threshold_ns_attr.attr,
	&reset_attr.attr,
	NULL,
};

static const struct attribute_group probe_group = {
	.attrs = probe_attrs,
};

/* The secondary histogram's files are named by the probe. */
static int probe_add_second(struct kmem_probe *probe)
{
	static const char *const suffix[2] = { "hist", "max" };
	int i;

	for (i = 0; i < 2; i++) {
		struct kobj_attribute *a = &probe->second_attrs[i];

		snprintf(probe->second_names[i], sizeof(probe->second_names[i]), "%s_%s",
			 probe->second, suffix[i]);
		sysfs_attr_init(&a->attr);
		a->attr.name = probe->second_names[i];
		a->attr.mode = 0444;
		a->show = i ? second_max_show : second_hist_show;
		probe->second_list[i] = &a->attr;
	}
	probe->second_group.attrs = probe->second_list;
	return sysfs_create_group(&probe->node->kobj, &probe->second_group);
}

/* Sets probe->reason when this kernel cannot carry the probe. */
static void probe_gate(struct kmem_probe *probe)
{
	const char *sym;

	if (probe->kconfig_missing) {
		snprintf(probe->reason, sizeof(probe->reason), "unsupported: %s",
			 probe->kconfig_missing);
		return;
	}
	sym = kmem_symbols_check(probe->symbols, probe->name);
	if (sym)
		snprintf(probe->reason, sizeof(probe->reason),
			 "unsupported: symbol %s not found", sym);
}

/* sysfs goes first, so no write can enable the probe again behind us. */
static void probe_free(struct kmem_probe *probe)
{
	kmem_node_destroy(probe->node);
	probe->node = NULL;
	probe_set_enabled(probe, false);
	free_percpu(probe->hist);
	free_percpu(probe->hist2);
	probe->hist = NULL;
	probe->hist2 = NULL;
}

static int probe_setup(struct kmem_probe *probe, bool enable)
{
	int ret;

	mutex_init(&probe->lock);
	probe->reason[0] = '\0';
	probe_gate(probe);
	probe->hist = alloc_percpu(struct kmem_hist);
	if (probe->second)
		probe->hist2 = alloc_percpu(struct kmem_hist);
	if (!probe->hist || (probe->second && !probe->hist2))
		return -ENOMEM;
	probe->node = kmem_node_create(probe->name, probes_kobj, probe, &probe_group);
	if (IS_ERR(probe->node)) {
		ret = PTR_ERR(probe->node);
		probe->node = NULL;
		return ret;
	}
	if (probe->second) {
		ret = probe_add_second(probe);
		if (ret)
			return ret;
	}
	/* A probe that cannot attach stays off; the module still loads. */
	if (enable && !probe->reason[0])
		probe_set_enabled(probe, true);
	return 0;
}

int kmem_probes_init(struct kobject *parent, bool enable)
{
	int i, ret;

	probes_kobj = kobject_create_and_add("probes", parent);
	if (!probes_kobj)
		return -ENOMEM;
	for (i = 0; i < KMEMCTL_PROBE_COUNT; i++) {
		probes[i]->name = probe_names[i];
		probes[i]->second = *probe_seconds[i] ? probe_seconds[i] : NULL;
		ret = probe_setup(probes[i], enable);
		if (ret)
			goto err_probes;
	}
	return 0;

err_probes:
	for (; i >= 0; i--)
		probe_free(probes[i]);
	kobject_put(probes_kobj);
	return ret;
}

void kmem_probes_exit(void)
{
	int i;

	for (i = 0; i < KMEMCTL_PROBE_COUNT; i++)
		probe_free(probes[i]);
	kobject_put(probes_kobj);
}
