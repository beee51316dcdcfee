// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kmemctl: a ring of the last KMEMCTL_EVENT_RING events, read like
 * /dev/kmsg: every open file keeps its own sequence cursor, and a reader
 * that falls behind skips ahead, leaving a gap in seq.
 *
 * Events are queued from probe handlers, possibly with scheduler or
 * timer locks held, so queueing only takes ring_lock and defers the wakeup
 * to an irq_work.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "kmem.h"

/*
 * Records copied out per ring_lock hold, bounding time with irqs off; the
 * batch is on the stack, which KASAN's redzones grow past 1 KiB at 16.
 */
#define READ_BATCH 8

static struct kmemctl_event *ring;
static u64 next_seq = 1;	/* seq of the next event queued */
static DEFINE_SPINLOCK(ring_lock);
static DECLARE_WAIT_QUEUE_HEAD(ring_wait);
static struct irq_work ring_wake;

static void ring_wake_fn(struct irq_work *work)
{
	wake_up_interruptible(&ring_wait);
}

void kmem_event_queue_task(u16 type, u16 source, u64 value, u64 threshold, u32 flags,
			   pid_t pid, const char *comm)
{
	struct kmemctl_event *e;
	unsigned long irqflags;

	if (!ring)
		return;
	spin_lock_irqsave(&ring_lock, irqflags);
	e = &ring[next_seq % KMEMCTL_EVENT_RING];
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->source = source;
	e->cpu = raw_smp_processor_id();
	e->seq = next_seq++;
	e->time_ns = ktime_get_real_ns();
	e->value = value;
	e->threshold = threshold;
	e->flags = flags;
	e->pid = pid;
	strscpy(e->comm, comm, sizeof(e->comm));
	spin_unlock_irqrestore(&ring_lock, irqflags);
	irq_work_queue(&ring_wake);
}

void kmem_event_queue(u16 type, u16 source, u64 value, u64 threshold)
{
	kmem_event_queue_task(type, source, value, threshold, 0, task_pid_nr(current),
			      current->comm);
}

static u64 oldest_seq(void)
{
	return next_seq > KMEMCTL_EVENT_RING ? next_seq - KMEMCTL_EVENT_RING : 1;
}

/* One per open file. */
struct reader {
	struct mutex lock;	/* serializes readers sharing the file */
	u64 cursor;
};

static int kmem_dev_open(struct inode *inode, struct file *file)
{
	struct reader *r;
	unsigned long flags;

	if (file->f_mode & FMODE_WRITE)
		return -EINVAL;
	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	mutex_init(&r->lock);
	spin_lock_irqsave(&ring_lock, flags);
	r->cursor = oldest_seq();
	spin_unlock_irqrestore(&ring_lock, flags);
	file->private_data = r;
	return stream_open(inode, file);
}

static int kmem_dev_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

static bool pending(u64 cursor)
{
	return cursor < READ_ONCE(next_seq);
}

/*
 * Copies up to max records from seq *from on into out; returns how many and
 * moves *from to the seq after the last (past any records overwritten).
 */
static size_t take_records(u64 *from, struct kmemctl_event *out, size_t max)
{
	unsigned long flags;
	size_t n = 0;

	spin_lock_irqsave(&ring_lock, flags);
	if (*from < oldest_seq())
		*from = oldest_seq();
	for (; n < max && *from < next_seq; n++, (*from)++)
		out[n] = ring[*from % KMEMCTL_EVENT_RING];
	spin_unlock_irqrestore(&ring_lock, flags);
	return n;
}

/* Called with r->lock held; moves r->cursor only past records copied out. */
static ssize_t read_locked(struct reader *r, char __user *buf, size_t want)
{
	struct kmemctl_event batch[READ_BATCH];
	size_t done = 0, n;
	u64 next;

	while (done < want) {
		next = r->cursor;
		n = take_records(&next, batch, min_t(size_t, want - done, READ_BATCH));
		if (!n)
			break;
		if (copy_to_user(buf + done * sizeof(batch[0]), batch, n * sizeof(batch[0])))
			return done ? done * sizeof(batch[0]) : -EFAULT;
		r->cursor = next;
		done += n;
	}
	return done * sizeof(batch[0]);
}

static ssize_t kmem_dev_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct reader *r = file->private_data;
	size_t want = count / sizeof(struct kmemctl_event);
	ssize_t ret;

	if (!want)
		return -EINVAL;
	for (;;) {
		if (mutex_lock_interruptible(&r->lock))
			return -ERESTARTSYS;
		ret = read_locked(r, buf, want);
		mutex_unlock(&r->lock);
		if (ret)
			return ret;
		/* Nothing pending, or another reader of this file took it. */
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(ring_wait, pending(READ_ONCE(r->cursor)));
		if (ret)
			return ret;
	}
}

static __poll_t kmem_dev_poll(struct file *file, poll_table *wait)
{
	struct reader *r = file->private_data;

	poll_wait(file, &ring_wait, wait);
	return pending(READ_ONCE(r->cursor)) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations kmem_dev_fops = {
	.owner = THIS_MODULE,
	.open = kmem_dev_open,
	.release = kmem_dev_release,
	.read = kmem_dev_read,
	.poll = kmem_dev_poll,
};

static struct miscdevice kmem_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kmemctl",
	.fops = &kmem_dev_fops,
	.mode = 0400,
};

int kmem_events_init(void)
{
	int ret;

	ring = kvcalloc(KMEMCTL_EVENT_RING, sizeof(*ring), GFP_KERNEL);
	if (!ring)
		return -ENOMEM;
	init_irq_work(&ring_wake, ring_wake_fn);
	ret = misc_register(&kmem_dev);
	if (ret)
		goto err_ring;
	return 0;

err_ring:
	kvfree(ring);
	ring = NULL;
	return ret;
}

/* Called after every producer is gone; open files pin the module. */
void kmem_events_exit(void)
{
	misc_deregister(&kmem_dev);
	irq_work_sync(&ring_wake);
	kvfree(ring);
	ring = NULL;
}
