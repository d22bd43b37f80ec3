// sysprobe makes the system calls a sandboxed command must not be able to make, each
// in a child of its own (a call that succeeds must not change what the next one
// sees), and prints one line per check: its name and the errno it got (0 when the
// call succeeded), or "signal N" when the child was killed.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/reboot.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int result(long rc) { return rc < 0 ? errno : 0; }

// raw_clone forks through clone with flags, the child exiting at once.
static int raw_clone(unsigned long flags) {
	long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		return errno;
	waitpid(pid, NULL, 0);
	return 0;
}

static int raw_clone3(unsigned long flags) {
	struct clone_args args;
	memset(&args, 0, sizeof args);
	args.flags = flags;
	args.exit_signal = SIGCHLD;
	long pid = syscall(SYS_clone3, &args, sizeof args);
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		return errno;
	waitpid(pid, NULL, 0);
	return 0;
}

static int set_ns(const char *path) {
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno;
	return result(setns(fd, 0));
}

static void *thread_main(void *arg) { return arg; }

#if defined(__x86_64__)
// int80 makes a call under the i386 ABI, as a 64-bit process can.
static long int80(long nr, long a, long b, long c, long d, long e) {
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
			 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}
static int i386(long nr, long a, long b, long c, long d, long e) {
	long rc = int80(nr, a, b, c, d, e);
	return rc < 0 && rc > -4096 ? (int)-rc : 0;
}
#endif

static int check(const char *name) {
	if (!strcmp(name, "mount"))
		return result(mount("none", "/tmp", "tmpfs", 0, NULL));
	if (!strcmp(name, "mount-bind"))
		return result(mount("/tmp", "/tmp", NULL, MS_BIND, NULL));
	if (!strcmp(name, "umount"))
		return result(umount2("/proc", MNT_DETACH));
	if (!strcmp(name, "pivot_root"))
		return result(syscall(SYS_pivot_root, "/tmp", "/tmp"));
	if (!strcmp(name, "chroot"))
		return result(chroot("/tmp"));
	if (!strcmp(name, "fsopen"))
		return result(syscall(SYS_fsopen, "tmpfs", 0));
	if (!strcmp(name, "open_tree"))
		return result(syscall(SYS_open_tree, AT_FDCWD, "/tmp", 1 /* OPEN_TREE_CLONE */));
	if (!strcmp(name, "unshare-user"))
		return result(unshare(CLONE_NEWUSER));
	if (!strcmp(name, "unshare-mount"))
		return result(unshare(CLONE_NEWNS));
	if (!strcmp(name, "unshare-net"))
		return result(unshare(CLONE_NEWNET));
	if (!strcmp(name, "setns-mount"))
		return set_ns("/proc/self/ns/mnt");
	if (!strcmp(name, "setns-user"))
		return set_ns("/proc/self/ns/user");
	if (!strcmp(name, "clone"))
		return raw_clone(0);
	if (!strcmp(name, "clone-user"))
		return raw_clone(CLONE_NEWUSER);
	if (!strcmp(name, "clone-mount"))
		return raw_clone(CLONE_NEWNS);
	if (!strcmp(name, "clone-pid"))
		return raw_clone(CLONE_NEWPID);
	if (!strcmp(name, "clone-net"))
		return raw_clone(CLONE_NEWNET);
	if (!strcmp(name, "clone3"))
		return raw_clone3(0);
	if (!strcmp(name, "fork")) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid < 0)
			return errno;
		waitpid(pid, NULL, 0);
		return 0;
	}
	if (!strcmp(name, "spawn")) {
		pid_t pid;
		char *argv[] = {"true", NULL};
		int rc = posix_spawnp(&pid, "true", NULL, NULL, argv, environ);
		if (rc == 0)
			waitpid(pid, NULL, 0);
		return rc;
	}
	if (!strcmp(name, "thread")) {
		pthread_t t;
		int rc = pthread_create(&t, NULL, thread_main, NULL);
		if (rc == 0)
			pthread_join(t, NULL);
		return rc;
	}
	if (!strcmp(name, "keyctl"))
		return result(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1));
	if (!strcmp(name, "add_key"))
		return result(syscall(SYS_add_key, "user", "sysprobe", "x", 1, KEY_SPEC_PROCESS_KEYRING));
	if (!strcmp(name, "request_key"))
		return result(syscall(SYS_request_key, "user", "sysprobe-none", NULL, 0));
	if (!strcmp(name, "ptrace"))
		return result(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
	if (!strcmp(name, "process_vm_readv")) {
		char src[4] = "abc", dst[4];
		struct iovec local = {dst, sizeof dst}, remote = {src, sizeof src};
		return result(syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0));
	}
	if (!strcmp(name, "perf_event_open")) {
		char attr[128] = {0};
		return result(syscall(SYS_perf_event_open, attr, 0, -1, -1, 0));
	}
	if (!strcmp(name, "bpf")) {
		char attr[128] = {0};
		return result(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof attr));
	}
	if (!strcmp(name, "userfaultfd"))
		return result(syscall(SYS_userfaultfd, 1 /* UFFD_USER_MODE_ONLY */));
	if (!strcmp(name, "io_uring_setup")) {
		char params[120] = {0};
		return result(syscall(SYS_io_uring_setup, 1, params));
	}
	if (!strcmp(name, "init_module"))
		return result(syscall(SYS_init_module, NULL, 0, ""));
	if (!strcmp(name, "reboot")) // a wrong magic number: refused after the privilege check
		return result(syscall(SYS_reboot, 0, 0, LINUX_REBOOT_CMD_CAD_OFF, NULL));
	if (!strcmp(name, "swapon"))
		return result(syscall(SYS_swapon, "/tmp/none", 0));
	if (!strcmp(name, "open_by_handle_at")) {
		char handle[136] = {0};
		*(unsigned int *)handle = 128;
		return result(syscall(SYS_open_by_handle_at, AT_FDCWD, handle, O_RDONLY));
	}
	if (!strncmp(name, "open-write:", 11)) {
		int fd = open(name + 11, O_WRONLY);
		if (fd < 0)
			return errno;
		close(fd);
		return 0;
	}
#if defined(__x86_64__)
	if (!strcmp(name, "x32-getpid"))
		return result(syscall(0x40000000 | SYS_getpid));
	if (!strcmp(name, "i386-getpid")) // whether the i386 ABI is there at all
		return int80(20, 0, 0, 0, 0, 0) == getpid() ? 0 : ENOSYS;
	if (!strcmp(name, "i386-mount"))
		return i386(21, (long)"none", (long)"/tmp", (long)"tmpfs", 0, 0);
	if (!strcmp(name, "i386-unshare-user"))
		return i386(310, CLONE_NEWUSER, 0, 0, 0, 0);
	if (!strcmp(name, "i386-keyctl"))
		return i386(288, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1, 0, 0);
#endif
	return -1;
}

// remounts tells the checks that change mounts or the root.
static int remounts(const char *name) {
	static const char *names[] = {"mount", "mount-bind", "umount", "pivot_root", "chroot", "fsopen",
				      "open_tree", "i386-mount", NULL};
	for (int i = 0; names[i]; i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			if (remounts(argv[i]))
				// Where the call may succeed, let it change a mount namespace of
				// its own, not the one of the checks that follow.
				unshare(CLONE_NEWNS);
			int rc = check(argv[i]);
			_exit(rc < 0 ? 255 : rc);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) < 0) {
			printf("%s fork %d\n", argv[i], errno);
			continue;
		}
		if (WIFSIGNALED(status))
			printf("%s signal %d\n", argv[i], WTERMSIG(status));
		else if (WEXITSTATUS(status) == 255)
			printf("%s unknown\n", argv[i]);
		else
			printf("%s %d\n", argv[i], WEXITSTATUS(status));
	}
	return 0;
}
