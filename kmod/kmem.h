/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces between the parts of kmemctl.ko.
 */
#ifndef _KMEM_H
#define _KMEM_H

#include <linux/kobject.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/types.h>

#include "compat.h"
#include "uapi/kmemctl.h"

struct insn;

/* symbols.c: non-exported kernel symbols, resolved through kallsyms. */
void kmem_symbols_init(void);
unsigned long kmem_symbol(const char *name);
bool kmem_symbol_range(const char *name, unsigned long *start, unsigned long *end);
bool kmem_symbol_at(unsigned long addr, unsigned long *size, unsigned long *offset);
int kmem_symbol_each(const char *name, int (*fn)(void *data, unsigned long addr), void *data);
int kmem_insn_decode(struct insn *insn, const void *kaddr, int len);
const char *kmem_symbols_check(const char *const *names, const char *user);

/*
 * sites.c: the running build's patch sites, from its image through
 * /sys/kernel/kmemctl/sites (docs/kmod.md, "Patch sites").
 */
#define KMEM_ALTS_MAX 4
#define KMEM_PATCHES_MAX 96
#define KMEM_LOCKS_MAX 64

/* One .altinstructions entry: what the kernel may put at its site. */
struct kmem_alt {
	u32 feature;		/* as the table has it: CPU feature and flags */
	bool always;		/* X86_FEATURE_ALWAYS: the original never stays */
	bool direct_call;	/* a call through the pointer the original calls through */
	u8 len;
	unsigned long repl;	/* where the replacement's bytes were linked, KASLR applied */
	const u8 *bytes;
};

enum kmem_patch_kind { KMEM_PATCH_ALT, KMEM_PATCH_PV };

struct kmem_patch {
	enum kmem_patch_kind kind;
	unsigned long addr;	/* in the running kernel */
	unsigned int len;
	unsigned int nalts;	/* alternatives at addr, in the table's order */
	struct kmem_alt alts[KMEM_ALTS_MAX];
	const u8 *orig;		/* the image's len bytes at addr */
	u8 pv_type;		/* paravirt site: its pv_ops slot, and what the slot holds */
	unsigned long pv_target;
};

struct kmem_patches {
	unsigned int n, nlocks;
	struct kmem_patch p[KMEM_PATCHES_MAX];
	unsigned long locks[KMEM_LOCKS_MAX];	/* SMP lock prefixes */
};

extern struct bin_attribute kmem_sites_attr;
void kmem_sites_exit(void);
void kmem_sites_lock(void);
void kmem_sites_unlock(void);
int kmem_sites_collect(unsigned long start, unsigned long end, struct kmem_patches *p);

/*
 * fingerprint.c: fingerprints of kernel functions that neither KASLR nor
 * the CPU's boot-time patching changes. A target's text is copied at load
 * (kmem_text_take), before anything of the module touches kernel text, and
 * fingerprinted once the build's patch sites are known (sites_lock held).
 */
struct kmem_text;
void kmem_fingerprint_init(void);
int kmem_text_take(const char *symbol, unsigned long addr, unsigned long size,
		   struct kmem_text **text, char *why, size_t len);
void kmem_text_free(struct kmem_text *text);
int kmem_fingerprint(const struct kmem_text *text, u64 *fp, char *why, size_t len);
int kmem_calls_to(const char *caller, const char *helper, unsigned long callee);

/*
 * native.c: whether the running kernel already has a mitigation's upstream
 * fix, from its own headers, code or behaviour; true fills reason.
 */
bool kmem_native_tlb_gen(char *reason, size_t len);
bool kmem_native_rstat_yield(char *reason, size_t len);
bool kmem_native_kasan_flush_batch(char *reason, size_t len);

/*
 * verify.c: verified builds. Every function a mitigation's copies stand in
 * for (its targets) is fingerprinted at load; a build record that has them
 * all as they are here admits it. kmem_verify_check() fills reason either
 * way; kmem_mitigations_regate() runs after each record admitted.
 */
void kmem_verify_init(void);
void kmem_verify_exit(void);
void kmem_verify_measure(enum kmemctl_mitigation id, const char *const *targets);
void kmem_verify_remeasure(void);
const char *kmem_verify_build_id(void);
bool kmem_verify_check(enum kmemctl_mitigation id, char *reason, size_t len);
extern const struct attribute_group kmem_verify_group;

/* records.c, generated from records/NAME.rec; ends with an empty entry */
struct kmem_shipped_record {
	const char *name;
	const char *text;
};

extern const struct kmem_shipped_record kmem_shipped_records[];

/* sysfs.c: directories whose attributes find their owner through kmem_node. */
struct kmem_node {
	struct kobject kobj;
	void *owner;
};

struct kmem_node *kmem_node_create(const char *name, struct kobject *parent, void *owner,
				   const struct attribute_group *group);
void kmem_node_destroy(struct kmem_node *node);
void *kmem_node_owner(struct kobject *kobj);

/* events.c: the /dev/kmemctl ring; kmem_event_queue() is safe in any context but NMI. */
int kmem_events_init(void);
void kmem_events_exit(void);
void kmem_event_queue(u16 type, u16 source, u64 value, u64 threshold);
/* The same with flags, naming a task other than current. */
void kmem_event_queue_task(u16 type, u16 source, u64 value, u64 threshold, u32 flags,
			   pid_t pid, const char *comm);

/* watchdog.c: the kernel's lockup, stall and hung-task reports. */
void kmem_watchdog_init(void);
void kmem_watchdog_exit(void);

/*
 * breaker.c: the module's own brake (docs/kmod.md, Breaker). While its
 * mitigation is armed (mode on), each call of a replacement is bracketed
 * by kmem_call_begin() and kmem_call_end(): one slot per CPU and
 * mitigation holds what the call's running time is measured from, and its
 * task. Only running time counts against trip_call_ms: a call preempted by
 * a busy CPU, or sleeping, is not slow. A task may migrate inside the
 * call, so the slot stays with the CPU it began on and only its owner frees
 * it; a call that finds its CPU's slot taken is not timed.
 */
struct kmem_call {
	unsigned long start;		/* jiffies */
	u64 start_runtime;		/* the owner's se.sum_exec_runtime */
	u64 owner_start;		/* its start_time: a reused task_struct is not the owner */
	unsigned long switches;		/* its nvcsw + nivcsw */
	struct task_struct *owner;	/* compared with current only */
	const char *func;		/* the function replaced */
};

DECLARE_PER_CPU(struct kmem_call[KMEMCTL_MIT_COUNT], kmem_calls);
extern bool kmem_breaker_enabled;	/* module param breaker */
extern bool kmem_breaker_armed[KMEMCTL_MIT_COUNT];
extern u64 kmem_breaker_limit[KMEMCTL_MIT_COUNT];	/* ns */
extern u64 kmem_call_max[KMEMCTL_MIT_COUNT];		/* ns since mode on: call_max_us */

int kmem_breaker_init(void);
void kmem_breaker_exit(void);
/* mitigation.c, under the mitigation's lock: mode on and off, trip_call_ms */
void kmem_breaker_arm(enum kmemctl_mitigation id, u64 limit_ms);
void kmem_breaker_disarm(enum kmemctl_mitigation id);
void kmem_breaker_set_limit(enum kmemctl_mitigation id, u64 limit_ms);
/* A call of current ran ns; cpu: the CPU it still runs on, or -1 if it returned. */
void kmem_breaker_slow(enum kmemctl_mitigation id, const char *func, u64 ran, int cpu);
void kmem_call_max_seen(enum kmemctl_mitigation id, u64 ran);
/* A call that will not return (the task is about to die): frees its slot. */
void kmem_call_abandon(enum kmemctl_mitigation id);
/*
 * A kernel report (cause: KMEMCTL_TRIP_*) about cpu (-1: unknown) and the
 * task it names (NULL: unknown). Safe in NMI.
 */
void kmem_breaker_report(u32 cause, int cpu, struct task_struct *task);
/* livepatch.c: the patching transition was stalled past livepatch_reverse_ms. */
void kmem_breaker_livepatch_stall(u64 busy_ms, u64 limit_ms, const char *why, pid_t pid,
				  const char *comm);

/* Returns the slot, or NULL when the call is not timed. */
static __always_inline struct kmem_call *kmem_call_begin(enum kmemctl_mitigation id,
							 const char *func)
{
	struct kmem_call *c;

	if (!READ_ONCE(kmem_breaker_armed[id]) || !READ_ONCE(kmem_breaker_enabled))
		return NULL;
	preempt_disable();
	c = this_cpu_ptr(&kmem_calls[id]);
	if (READ_ONCE(c->owner)) {
		c = NULL;
	} else {
		c->func = func;
		c->switches = current->nvcsw + current->nivcsw;
		c->start_runtime = current->se.sum_exec_runtime;
		c->owner_start = current->start_time;
		c->start = jiffies;
		/* the checker runs in an interrupt: the owner comes last */
		smp_store_release(&c->owner, current);
	}
	preempt_enable();
	return c;
}

/*
 * How long, in ns, current has run inside its call c. While it has not
 * left its CPU since the call began, that is the time since, even with
 * irqs off throughout: the whole ticks since, as jiffies cost a load where
 * a clock read costs more on the usercopy hot path. Once it has, it is the
 * CPU time the scheduler charged it, as of the last tick or switch: time
 * off its CPU, preempted or asleep, does not count.
 */
static __always_inline u64 kmem_call_ran(const struct kmem_call *c)
{
	unsigned long ticks;

	if (current->nvcsw + current->nivcsw != c->switches)
		return current->se.sum_exec_runtime - c->start_runtime;
	ticks = jiffies - c->start;
	return ticks ? jiffies_to_nsecs(ticks - 1) : 0;
}

static __always_inline void kmem_call_end(struct kmem_call *c, enum kmemctl_mitigation id)
{
	const char *func;
	u64 ran;

	if (!c)
		return;
	ran = kmem_call_ran(c);
	func = c->func;
	WRITE_ONCE(c->owner, NULL);
	if (unlikely(ran > READ_ONCE(kmem_call_max[id])))
		kmem_call_max_seen(id, ran);
	if (unlikely(ran > READ_ONCE(kmem_breaker_limit[id])))
		kmem_breaker_slow(id, func, ran, -1);
}

/* Log2 histogram buckets, shared with userspace lib/hist.h. */
#define KMEM_HIST_BUCKETS 64

struct kmem_hist {
	u64 buckets[KMEM_HIST_BUCKETS];
	u64 count;
	u64 sum;
	u64 max;
};

/*
 * A probe: per-CPU histograms fed from kprobe handlers, plus its sysfs
 * directory. The family file fills the descriptor and the enable/disable
 * hooks; probe.c owns the rest. enable/disable run under probe->lock.
 */
struct kmem_probe {
	const char *name;
	enum kmemctl_probe id;
	/* the secondary histogram, shown as <second>_hist and <second>_max, or NULL */
	const char *second;
	/* "CONFIG_X is not set" when the kernel lacks what the probe watches */
	const char *kconfig_missing;
	const char *const *symbols;
	/* for probes timing one function with kmem_probe_timed_*(): its name */
	const char *timed;
	int (*enable)(struct kmem_probe *probe);
	void (*disable)(struct kmem_probe *probe);
	unsigned long (*missed)(struct kmem_probe *probe);

	struct mutex lock;	/* enabled, and the hooks' registrations */
	bool enabled;
	u64 threshold_ns;
	char reason[96];
	struct kmem_hist __percpu *hist;
	struct kmem_hist __percpu *hist2;
	struct kmem_node *node;
	struct kretprobe rp;
	char second_names[2][32];
	struct kobj_attribute second_attrs[2];
	struct attribute *second_list[3];
	struct attribute_group second_group;
};

/* probe.c */
int kmem_probes_init(struct kobject *parent, bool enable);
void kmem_probes_exit(void);
void kmem_probe_record(struct kmem_probe *probe, u64 value);
void kmem_probe_record2(struct kmem_probe *probe, u64 value);
int kmem_probe_attach(struct kprobe **kps, int num, struct kretprobe *rp);
void kmem_probe_detach(struct kprobe **kps, int num, struct kretprobe *rp);
int kmem_probe_timed_enable(struct kmem_probe *probe);
void kmem_probe_timed_disable(struct kmem_probe *probe);
unsigned long kmem_probe_timed_missed(struct kmem_probe *probe);
/* Registers an enabled probe's kprobes again, so they run before newer ones. */
void kmem_probe_reattach(struct kmem_probe *probe);
void kmem_kprobe_init(struct kprobe *kp, const char *symbol, kprobe_pre_handler_t pre);
void kmem_kretprobe_init(struct kretprobe *rp, const char *symbol,
			 kretprobe_handler_t entry, kretprobe_handler_t ret, size_t data_size);

/* Probe families, one file each. */
extern struct kmem_probe kmem_probe_rstat_flush;
extern struct kmem_probe kmem_probe_usercopy_vmalloc;
extern struct kmem_probe kmem_probe_vmap_purge;
extern struct kmem_probe kmem_probe_kasan_reduce;
extern struct kmem_probe kmem_probe_tlb_shootdown;

/*
 * livepatch.c: the module's one livepatch. Each fix (lp_*.c) brings its
 * replacements; those of every fix that passed its gates ride in the patch
 * whichever mitigations are on, and run the kernel's own logic while
 * their mitigation is off.
 */
struct kmem_lp_func {
	const char *old_name;
	void *new_func;
};

struct kmem_lp_fix {
	const struct kmem_lp_func *funcs;	/* ends with an empty entry */
	/* the kernel symbols it needs, NULL-terminated: the gate before verify.c's */
	const char *const *symbols;
	/* what the copies stand in for (verify.c), the replaced functions first */
	const char *const *targets;
	/* resolves what the replacements call; before the fix joins the patch */
	int (*prepare)(void);
	/*
	 * turns the replacements' new behaviour on or off; params: every
	 * mitigation's, indexed by enum kmemctl_param_id
	 */
	void (*set)(bool on, const u64 *params);
};

#define KMEM_LP_FUNCS 4	/* every fix's replacements together */

#ifdef HAVE_LP_RSTAT
extern const struct kmem_lp_fix kmem_lp_rstat;
#endif
#ifdef HAVE_LP_KASAN_PURGE
extern const struct kmem_lp_fix kmem_lp_kasan_purge;
#endif

/* Where the patch's last transition stands, for state and reason. */
struct kmem_lp_status {
	bool busy;		/* a transition is under way */
	bool patching;		/* towards patched, else towards removal */
	bool stalled;		/* busy for longer than livepatch_stall_ms */
	u64 busy_ms;
	pid_t pid;		/* a task not yet switched, if any */
	char comm[TASK_COMM_LEN];
	unsigned int waiting;	/* tasks not yet switched */
};

#ifdef CONFIG_LIVEPATCH
int kmem_livepatch_add(const struct kmem_lp_fix *fix);
int kmem_livepatch_get(u16 source);
void kmem_livepatch_put(u16 source);
void kmem_livepatch_status(struct kmem_lp_status *st);
void kmem_livepatch_exit(void);
#else
/* Without livepatch no mitigation has a fix, so only exit is called. */
static inline int kmem_livepatch_add(const struct kmem_lp_fix *fix) { return -EOPNOTSUPP; }
static inline int kmem_livepatch_get(u16 source) { return -EOPNOTSUPP; }
static inline void kmem_livepatch_put(u16 source) {}
static inline void kmem_livepatch_status(struct kmem_lp_status *st)
{
	memset(st, 0, sizeof(*st));
}

static inline void kmem_livepatch_exit(void) {}
#endif

/*
 * A fix that redirects one function without livepatch: an ftrace direct
 * call (usercopy_fastpath.c) or, where ftrace cannot reach, a kprobe
 * (kasan_quarantine.c). On and off take effect at once; while on, the
 * module holds a reference on itself, and at unload it waits for every
 * task to have left the replacement.
 */
struct kmem_direct_fix {
	const char *const *symbols;	/* as in struct kmem_lp_fix */
	const char *const *targets;
	int (*prepare)(void);	/* resolves symbols, at load */
	/* params: as for set() above; the replacement may read them at any time */
	int (*enable)(const u64 *params);
	int (*disable)(void);	/* on failure the replacement may still be reached */
	/* appends fix-specific lines to the mitigation's stats, or NULL */
	ssize_t (*stats)(char *buf, ssize_t len);
};

#ifdef HAVE_USERCOPY_FASTPATH
extern const struct kmem_direct_fix kmem_usercopy_fastpath;
#endif
#ifdef HAVE_KASAN_QUARANTINE
extern const struct kmem_direct_fix kmem_kasan_quarantine;
#endif

/* mitigation.c */
int kmem_mitigations_init(struct kobject *parent);
void kmem_mitigations_exit(void);
void kmem_mitigations_regate(void);
bool kmem_mitigation_livepatched(enum kmemctl_mitigation id);
const char *kmem_mitigation_name(enum kmemctl_mitigation id);

/* A trip the breaker asks mitigation.c to carry out, from its workqueue. */
struct kmem_trip {
	u32 cause;		/* enum kmemctl_trip_cause */
	u64 value, threshold;	/* as in the KMEMCTL_EV_TRIP record */
	pid_t pid;
	char comm[TASK_COMM_LEN];
	char reason[160];	/* "tripped: ..." */
};

void kmem_mitigation_trip(enum kmemctl_mitigation id, const struct kmem_trip *trip);

#endif
