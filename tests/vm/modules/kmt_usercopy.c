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
 * With `overrun` set, every read() instead does one copy of size + PAGE_SIZE
 * bytes that starts size / 2 bytes before the end of the buffer, so it runs
 * through the guard page and on past the end of the vmap area (the usercopy
 * check counts the guard page as part of the area). The check must catch it:
 * "usercopy: Kernel memory exposure attempt detected from vmalloc (offset
 * <pages * PAGE_SIZE - size / 2>, size <size + PAGE_SIZE>)!" and a BUG that kills
 * the reading task. Such a read needs a buffer of at least size + PAGE_SIZE
 * bytes (else EINVAL). Without the check the copy faults on the guard page and
 * read() fails with EFAULT.
 *
 * Contention on the vmap locks comes from kmt_vmalloc's `churn`.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
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

static bool overrun;
module_param(overrun, bool, 0644);
MODULE_PARM_DESC(overrun, "1: each read does one copy past the end of the vmap area");

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

static ssize_t kmt_overrun_read(char __user *ubuf, size_t len, size_t sz)
{
	size_t head = sz / 2;
	size_t n = sz + PAGE_SIZE;

	if (len < n)
		return -EINVAL;
	pr_info("overrun: copying %zu bytes from offset %zu of a %zu-byte buffer\n", n,
		kmt_buf_size - head, kmt_buf_size);
	if (copy_to_user(ubuf, kmt_buf + kmt_buf_size - head, n))
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

	if (sz == 0 || sz > kmt_buf_size || len < sz)
		return -EINVAL;
	if (READ_ONCE(overrun))
		return kmt_overrun_read(ubuf, len, sz);
	if (fixed >= 0) {
		if ((size_t)fixed > kmt_buf_size - sz)
			return -EINVAL;
		off = fixed;
	}
	if (n == 0)
		return 0;

	for (i = 0; i < n; i++) {
		if (copy_to_user(ubuf, kmt_buf + off, sz)) {
			atomic_long_add(i, &kmt_total);
			return -EFAULT;
		}
		if (fixed < 0) {
			off += sz;
			if (off > kmt_buf_size - sz)
				off = 0;
		}
		if (fatal_signal_pending(current)) {
			atomic_long_add(i + 1, &kmt_total);
			return -EINTR;
		}
		cond_resched();
	}
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
	misc_deregister(&kmt_misc);
	vfree(kmt_buf);
}

module_init(kmt_usercopy_init);
module_exit(kmt_usercopy_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kmemctl VM tests: copy_to_user() from vmalloc() memory");
