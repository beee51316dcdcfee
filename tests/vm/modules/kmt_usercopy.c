// SPDX-License-Identifier: GPL-2.0
/*
 * kmt_usercopy.ko: hardened-usercopy workload for the VM tests.
 *
 * Every read() of /dev/kmt_usercopy does `copies` copy_to_user() calls of
 * `size` bytes from a vmalloc()ed buffer of `pages` pages into the caller's
 * buffer, so each copy goes through the vmalloc branch of the usercopy check
 * (find_vmap_area() under vmap_area_lock). The source offset steps by `size`
 * through the buffer and wraps so that every copy stays in bounds, or stays
 * at `offset` when that is >= 0. read() returns `size`, the length of the
 * last copy; a buffer shorter than `size` fails with EINVAL.
 *
 * Copies the usercopy check must judge, one per read():
 * - bad_size > 0: bad_size bytes from bad_offset, which may lie past the
 *   buffer: in its guard page (the vmap area of an N-page vmalloc() is N + 1
 *   pages, and the check counts the guard page as part of the area) or
 *   beyond. A copy that ends past the area must be caught: "usercopy: Kernel
 *   memory exposure attempt detected from vmalloc (offset <bad_offset>, size
 *   <bad_size>)!" and a BUG that kills the reading task. One that stays in
 *   the area but touches the guard page passes the check and faults: read()
 *   fails with EFAULT.
 *   With bad_from=slab the copy is from a 64-byte kmalloc() object instead:
 *   past the object, "... from SLUB object 'kmalloc-64' (offset <bad_offset>,
 *   size <bad_size>)!"; with bad_from=text from the kernel's text (the
 *   address of schedule()): "... from kernel text (offset <n>, size
 *   <bad_size>)!". These take the check's other branches.
 * - freed: `size` bytes from `offset` (or 0) of a `pages`-page buffer that was
 *   just vfree()d, whose area is gone: "... from vmalloc 'no area' (offset 0,
 *   size <size>)!" and a BUG.
 * Such a read needs a user buffer of the copy's length (else EINVAL).
 *
 * Contention on the vmap locks comes from kmt_vmalloc's `churn`.
 *
 * stall_ms > 0 makes every usercopy check's lookup slow, for the breaker's
 * tests: a kprobe on find_vmap_area() sends each call made from a read()
 * to stalled_find_vmap_area(), which stalls stall_ms, then looks the area
 * up. How, by stall_how: "spin" (default) spins with preemption off, as a
 * vmap_area_lock held that long would; "yield" spins until the task has
 * run stall_ms of CPU time, giving its CPU to any other task that wants it;
 * "sleep" sleeps. stalled_wall_ms and stalled_run_ms read back how long the
 * last stall took and how much of it the task ran. The
 * spin runs outside the kprobe handler, where the kernel's own kprobes
 * (add_taint()'s, on a soft lockup) could not fire. Only copies that cross
 * a page boundary (offset, size) look their area up when
 * usercopy-fastpath is on.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

static unsigned int copies = 1000;
module_param(copies, uint, 0644);
MODULE_PARM_DESC(copies, "copy_to_user() calls per read (default 1000)");

static unsigned int size = 256;
module_param(size, uint, 0644);
MODULE_PARM_DESC(size, "bytes per copy, 1..pages * PAGE_SIZE (default 256)");

static unsigned int pages = 4;
module_param(pages, uint, 0444);
MODULE_PARM_DESC(pages, "pages in the vmalloc() source buffer, 1..1024 (default 4)");

static int offset = -1;
module_param(offset, int, 0644);
MODULE_PARM_DESC(offset, "fixed source offset, or -1 to cycle through the buffer (default -1)");

static unsigned int bad_size;
module_param(bad_size, uint, 0644);
MODULE_PARM_DESC(bad_size, "> 0: each read does one copy of this many bytes from bad_offset");

static unsigned int bad_offset;
module_param(bad_offset, uint, 0644);
MODULE_PARM_DESC(bad_offset, "source offset of the bad_size copy, may lie past the buffer");

static char bad_from[16] = "vmalloc";
module_param_string(bad_from, bad_from, sizeof(bad_from), 0644);
MODULE_PARM_DESC(bad_from, "source of the bad_size copy: vmalloc (default), slab or text");

#define KMT_SLAB_SIZE 64

static bool freed;
module_param(freed, bool, 0644);
MODULE_PARM_DESC(freed, "1: each read copies from a buffer it has just vfree()d");

static unsigned int stall_ms;

enum { STALL_SPIN, STALL_YIELD, STALL_SLEEP };
static const char *const stall_hows[] = { "spin", "yield", "sleep" };
static int stall_how;

static int stall_how_set(const char *val, const struct kernel_param *kp)
{
	int how = sysfs_match_string(stall_hows, val);

	if (how < 0)
		return how;
	WRITE_ONCE(stall_how, how);
	return 0;
}

static int stall_how_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", stall_hows[READ_ONCE(stall_how)]);
}

static const struct kernel_param_ops stall_how_ops = {
	.set = stall_how_set,
	.get = stall_how_get,
};
module_param_cb(stall_how, &stall_how_ops, NULL, 0644);
MODULE_PARM_DESC(stall_how,
		 "spin (preemption off, default), yield (run stall_ms, preemptible) or sleep");

static unsigned int stalled_wall_ms;
module_param(stalled_wall_ms, uint, 0444);
MODULE_PARM_DESC(stalled_wall_ms, "how long the last stall took (ms)");

static unsigned int stalled_run_ms;
module_param(stalled_run_ms, uint, 0444);
MODULE_PARM_DESC(stalled_run_ms, "how much of the last stall the task ran (ms)");

/* the task in kmt_read(), compared only, and that task back in find_vmap_area() */
static struct task_struct *stall_task;
static struct task_struct *stall_inner;
static bool stall_registered;
static DEFINE_MUTEX(stall_lock);

/*
 * Spins on ktime_get_ns(), as kmt_lockup does: mdelay() counts TSC cycles,
 * which under QEMU's TCG need not keep pace with the kernel's clocks.
 */
static void stall(unsigned int ms)
{
	u64 limit = (u64)ms * NSEC_PER_MSEC;
	u64 prev = ktime_get_ns();
	u64 spun = 0;

	while (spun < limit) {
		u64 now;

		cpu_relax();
		now = ktime_get_ns();
		if (now > prev)
			spun += now - prev;
		prev = now;
	}
}

/* Runs ms of CPU time, rescheduling whenever another task is due the CPU. */
static void stall_yielding(unsigned int ms)
{
	u64 start = current->se.sum_exec_runtime;

	while (current->se.sum_exec_runtime - start < (u64)ms * NSEC_PER_MSEC) {
		cpu_relax();
		cond_resched();
	}
}

static struct kprobe stall_kp = {
	.symbol_name = "find_vmap_area",
};

static noinline struct vmap_area *stalled_find_vmap_area(unsigned long addr)
{
	struct vmap_area *(*find)(unsigned long addr) = (void *)stall_kp.addr;
	struct vmap_area *va;

	unsigned int ms = READ_ONCE(stall_ms);
	u64 wall = ktime_get_ns(), run = current->se.sum_exec_runtime;

	switch (READ_ONCE(stall_how)) {
	case STALL_YIELD:
		stall_yielding(ms);
		break;
	case STALL_SLEEP:
		msleep(ms);
		break;
	default:
		preempt_disable();
		stall(ms);
		preempt_enable();
	}
	WRITE_ONCE(stalled_wall_ms, div_u64(ktime_get_ns() - wall, NSEC_PER_MSEC));
	WRITE_ONCE(stalled_run_ms, div_u64(current->se.sum_exec_runtime - run, NSEC_PER_MSEC));
	WRITE_ONCE(stall_inner, current);
	va = find(addr);
	WRITE_ONCE(stall_inner, NULL);
	return va;
}

/* No post handler: the kprobe may then move the instruction pointer. */
static int stall_pre(struct kprobe *kp, struct pt_regs *regs)
{
	if (!READ_ONCE(stall_ms) || READ_ONCE(stall_task) != current ||
	    READ_ONCE(stall_inner) == current)
		return 0;
	instruction_pointer_set(regs, (unsigned long)stalled_find_vmap_area);
	return 1;
}

/* The kprobe goes in on the first non-zero value, so other tests never meet it. */
static int stall_set(const char *val, const struct kernel_param *kp)
{
	unsigned int ms;
	int ret;

	ret = kstrtouint(val, 0, &ms);
	if (ret)
		return ret;
	if (ms > 60000)
		return -EINVAL;
	mutex_lock(&stall_lock);
	if (ms && !stall_registered) {
		stall_kp.pre_handler = stall_pre;
		ret = register_kprobe(&stall_kp);
		stall_registered = !ret;
	}
	if (!ret)
		WRITE_ONCE(stall_ms, ms);
	mutex_unlock(&stall_lock);
	return ret;
}

static const struct kernel_param_ops stall_ops = {
	.set = stall_set,
	.get = param_get_uint,
};
module_param_cb(stall_ms, &stall_ops, &stall_ms, 0644);
MODULE_PARM_DESC(stall_ms, "> 0: each find_vmap_area() call from a read() takes this long (ms)");

static atomic_long_t kmt_total = ATOMIC_LONG_INIT(0);
static void *kmt_buf;
static size_t kmt_buf_size;

static int total_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static int total_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%ld\n", atomic_long_read(&kmt_total));
}

static const struct kernel_param_ops total_ops = {
	.set = total_set,
	.get = total_get,
};
module_param_cb(total, &total_ops, NULL, 0444);
MODULE_PARM_DESC(total, "copy_to_user() calls done since load (read-only)");

static ssize_t kmt_copy_out(char __user *ubuf, const void *src, size_t n)
{
	if (copy_to_user(ubuf, src, n))
		return -EFAULT;
	atomic_long_inc(&kmt_total);
	return n;
}

static ssize_t kmt_bad_read(char __user *ubuf, size_t len, size_t off, size_t n)
{
	ssize_t ret;
	void *obj;

	if (len < n || off > (size_t)pages * PAGE_SIZE * 2)
		return -EINVAL;
	if (sysfs_streq(bad_from, "text")) {
		pr_info("copying %zu bytes from kernel text\n", n);
		return kmt_copy_out(ubuf, (const void *)schedule + off, n);
	}
	if (sysfs_streq(bad_from, "slab")) {
		obj = kmalloc(KMT_SLAB_SIZE, GFP_KERNEL);
		if (!obj)
			return -ENOMEM;
		pr_info("copying %zu bytes from offset %zu of a %d-byte kmalloc object\n", n, off,
			KMT_SLAB_SIZE);
		ret = kmt_copy_out(ubuf, obj + off, n);
		kfree(obj);
		return ret;
	}
	pr_info("copying %zu bytes from offset %zu of a %zu-byte buffer\n", n, off, kmt_buf_size);
	return kmt_copy_out(ubuf, kmt_buf + off, n);
}

static ssize_t kmt_freed_read(char __user *ubuf, size_t len, size_t off, size_t n)
{
	void *gone;

	if (len < n || off + n > kmt_buf_size)
		return -EINVAL;
	gone = vmalloc(kmt_buf_size);
	if (!gone)
		return -ENOMEM;
	vfree(gone);
	pr_info("copying %zu bytes from offset %zu of a freed %zu-byte buffer\n", n, off,
		kmt_buf_size);
	if (copy_to_user(ubuf, gone + off, n))
		return -EFAULT;
	atomic_long_inc(&kmt_total);
	return n;
}

static ssize_t kmt_read(struct file *file, char __user *ubuf, size_t len, loff_t *ppos)
{
	unsigned int n = READ_ONCE(copies);
	size_t sz = READ_ONCE(size);
	int fixed = READ_ONCE(offset);
	size_t off = 0;
	unsigned int i;

	if (READ_ONCE(bad_size))
		return kmt_bad_read(ubuf, len, READ_ONCE(bad_offset), READ_ONCE(bad_size));
	if (sz == 0 || sz > kmt_buf_size || len < sz)
		return -EINVAL;
	if (READ_ONCE(freed))
		return kmt_freed_read(ubuf, len, fixed < 0 ? 0 : fixed, sz);
	if (fixed >= 0) {
		if ((size_t)fixed > kmt_buf_size - sz)
			return -EINVAL;
		off = fixed;
	}
	if (n == 0)
		return 0;

	WRITE_ONCE(stall_task, current);
	for (i = 0; i < n; i++) {
		if (copy_to_user(ubuf, kmt_buf + off, sz)) {
			WRITE_ONCE(stall_task, NULL);
			atomic_long_add(i, &kmt_total);
			return -EFAULT;
		}
		if (fixed < 0) {
			off += sz;
			if (off > kmt_buf_size - sz)
				off = 0;
		}
		if (fatal_signal_pending(current)) {
			WRITE_ONCE(stall_task, NULL);
			atomic_long_add(i + 1, &kmt_total);
			return -EINTR;
		}
		cond_resched();
	}
	WRITE_ONCE(stall_task, NULL);
	atomic_long_add(n, &kmt_total);
	return sz;
}

static const struct file_operations kmt_fops = {
	.owner = THIS_MODULE,
	.read = kmt_read,
	.llseek = noop_llseek,
};

static struct miscdevice kmt_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kmt_usercopy",
	.fops = &kmt_fops,
	.mode = 0444,
};

static int __init kmt_usercopy_init(void)
{
	size_t i;
	int ret;

	if (pages == 0 || pages > 1024) {
		pr_err("pages=%u is out of range 1..1024\n", pages);
		return -EINVAL;
	}
	kmt_buf_size = (size_t)pages * PAGE_SIZE;
	kmt_buf = vmalloc(kmt_buf_size);
	if (!kmt_buf)
		return -ENOMEM;
	for (i = 0; i < kmt_buf_size; i++)
		((u8 *)kmt_buf)[i] = i;

	ret = misc_register(&kmt_misc);
	if (ret)
		goto err_buf;
	pr_info("/dev/%s: %u-page source buffer\n", kmt_misc.name, pages);
	return 0;

err_buf:
	vfree(kmt_buf);
	return ret;
}

static void __exit kmt_usercopy_exit(void)
{
	if (stall_registered)
		unregister_kprobe(&stall_kp);
	misc_deregister(&kmt_misc);
	vfree(kmt_buf);
}

module_init(kmt_usercopy_init);
module_exit(kmt_usercopy_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kmemctl VM tests: copy_to_user() from vmalloc() memory");
