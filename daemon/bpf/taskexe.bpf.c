// SPDX-License-Identifier: (LGPL-2.1-or-later OR BSD-2-Clause)
/*
 * Which file a running process executes, for when /proc cannot say: the
 * shipped unit gives latniced no CAP_SYS_PTRACE, and /proc/PID/exe of
 * another user's process is EACCES without it. A task iterator reads the
 * process's exe_file: its inode and device (what Exe= paths are compared
 * with) and its path, built from the dentries and mounts up to the root of
 * the process's mount tree (bpf_d_path() would want a trusted file, which a
 * task's exe_file is not to an iterator). User space attaches it to one
 * process (the link's pid filter, Linux 6.1) or, before that, to all, with
 * want_tgid naming the one.
 */
#include "kernel-types.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "latnice/event.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define DEPTH_MAX 48  /* path components followed; deeper: no path (the inode still tells) */
#define NAME_MAX_ 255

__u32 want_tgid = 0; /* without the link's pid filter: the one process (kernel pid); 0 with it */

struct task_exe_buf {
        const unsigned char *names[64]; /* DEPTH_MAX used; a power of two for the verifier */
        struct latnice_task_exe e;
        char slack[NAME_MAX_ + 1]; /* a component read at the end of path runs over it */
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct task_exe_buf);
} scratch SEC(".maps");

struct walk {
        struct task_exe_buf *b;
        struct dentry *d;
        struct vfsmount *vm;
        struct mount *mnt;
        __u32 n, off;
        bool fail;
};

static __always_inline struct vfsmount *vfsmount_of(struct mount *m) {
        return (void *) ((char *) m + bpf_core_field_offset(struct mount, mnt));
}

/* One step up: to the parent dentry, or across a mount to its mount point. 1 at the root (or on
 * failure): stop. bpf_loop() callbacks, so the verifier checks each step once. */
static long walk_up(__u64 i, void *ctx) {
        struct walk *w = ctx;
        /* Locals: BPF_CORE_READ() relocates each member access, and struct walk is not the kernel's. */
        struct dentry *d = w->d, *parent;
        struct vfsmount *vm = w->vm;
        struct mount *mnt = w->mnt;

        if (d == BPF_CORE_READ(vm, mnt_root)) {
                struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

                if (up == mnt)
                        return 1; /* the root of the tree */
                w->d = BPF_CORE_READ(mnt, mnt_mountpoint);
                w->mnt = up;
                w->vm = vfsmount_of(up);
                return 0;
        }
        parent = BPF_CORE_READ(d, d_parent);
        if (parent == d)
                return 1;
        if (w->n >= DEPTH_MAX) {
                w->fail = true;
                return 1;
        }
        w->b->names[w->n & 63] = BPF_CORE_READ(d, d_name.name);
        w->n++;
        w->d = parent;
        return 0;
}

/* Appends "/" and the next component, root first. */
static long walk_write(__u64 i, void *ctx) {
        struct walk *w = ctx;
        __u64 at;
        long l;

        if (i >= w->n)
                return 1;
        if (w->off >= LATNICE_EXE_LEN - 1) {
                w->fail = true;
                return 1;
        }
        w->b->e.path[w->off & (LATNICE_EXE_LEN - 1)] = '/';
        w->off++;
        at = w->off;
        /* A mask the compiler cannot drop, for the verifier. */
        asm volatile("%[at] &= %[mask]" : [at] "+r"(at) : [mask] "i"(LATNICE_EXE_LEN - 1));
        l = bpf_probe_read_kernel_str(&w->b->e.path[at], NAME_MAX_ + 1, w->b->names[(w->n - 1 - i) & 63]);
        if (l <= 1) {
                w->fail = true;
                return 1;
        }
        w->off += l - 1;
        return 0;
}

/* The path of f from the root of its mount tree into b->e.path; its length with the NUL, 0 if it
 * does not fit or is deeper than DEPTH_MAX. */
static __always_inline __u32 build_path(struct task_exe_buf *b, struct file *f) {
        struct walk w = { .b = b };
        struct vfsmount *vm;

        w.d = BPF_CORE_READ(f, f_path.dentry);
        w.vm = BPF_CORE_READ(f, f_path.mnt);
        vm = w.vm;
        w.mnt = (void *) ((char *) vm - bpf_core_field_offset(struct mount, mnt));
        bpf_loop(2 * DEPTH_MAX, walk_up, &w, 0);
        vm = w.vm;
        if (w.fail || w.n == 0 || w.d != BPF_CORE_READ(vm, mnt_root))
                return 0; /* deeper than that */
        bpf_loop(DEPTH_MAX, walk_write, &w, 0);
        if (w.fail || w.off >= LATNICE_EXE_LEN)
                return 0;
        b->e.path[w.off & (LATNICE_EXE_LEN - 1)] = 0;
        return w.off + 1;
}

SEC("iter/task")
int task_exe(struct bpf_iter__task *ctx) {
        struct task_struct *task = ctx->task;
        struct task_exe_buf *b;
        struct file *exe;
        __u32 zero = 0;

        if (!task || task->pid != task->tgid)
                return 0;
        if (want_tgid && (__u32) task->tgid != want_tgid)
                return 0;
        exe = BPF_CORE_READ(task, mm, exe_file);
        if (!exe)
                return 0; /* a kernel thread, or exiting */
        b = bpf_map_lookup_elem(&scratch, &zero);
        if (!b)
                return 0;
        b->e.tgid = task->tgid;
        b->e.start_boottime = task->start_boottime;
        b->e.ino = BPF_CORE_READ(exe, f_inode, i_ino);
        b->e.dev = BPF_CORE_READ(exe, f_inode, i_sb, s_dev);
        b->e.path_len = build_path(b, exe);
        bpf_seq_write(ctx->meta->seq, &b->e, sizeof(b->e));
        return 0;
}
