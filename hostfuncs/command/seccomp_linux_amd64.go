package command

import "golang.org/x/sys/unix"

// The x86_64 ABI (x32 refused whole), and the i386 one a 64-bit process reaches with
// int 0x80: its numbers are not in x/sys/unix here, hence the literals (from the
// kernel's unistd_32.h).
var archTables = []archTable{
	{
		arch: unix.AUDIT_ARCH_X86_64, clone: unix.SYS_CLONE, clone3: unix.SYS_CLONE3, x32: true,
		denied: []uint32{
			unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
			unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN,
			unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
			unix.SYS_UNSHARE, unix.SYS_SETNS,
			unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
			unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
			unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
			unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
			unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT,
			unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_USERFAULTFD,
			unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		},
	},
	{
		arch: unix.AUDIT_ARCH_I386, clone: 120, clone3: 435,
		denied: []uint32{
			21 /* mount */, 22 /* umount */, 52 /* umount2 */, 217 /* pivot_root */, 61, /* chroot */
			428 /* open_tree */, 467 /* open_tree_attr */, 429 /* move_mount */, 430, /* fsopen */
			431 /* fsconfig */, 432 /* fsmount */, 433 /* fspick */, 442, /* mount_setattr */
			310 /* unshare */, 346, /* setns */
			288 /* keyctl */, 286 /* add_key */, 287, /* request_key */
			26 /* ptrace */, 347 /* process_vm_readv */, 348 /* process_vm_writev */, 438, /* pidfd_getfd */
			357 /* bpf */, 336, /* perf_event_open */
			128 /* init_module */, 350 /* finit_module */, 129, /* delete_module */
			283 /* kexec_load */, 88, /* reboot */
			87 /* swapon */, 115 /* swapoff */, 342 /* open_by_handle_at */, 374, /* userfaultfd */
			425 /* io_uring_setup */, 426 /* io_uring_enter */, 427, /* io_uring_register */
		},
	},
}
