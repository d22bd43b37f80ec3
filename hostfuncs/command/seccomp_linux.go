//go:build linux && (amd64 || arm64)

package command

import (
	"encoding/binary"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// archTable is what the seccomp filter refuses for one system call ABI: the calls
// denied outright, clone (allowed unless its flags ask for a namespace) and clone3
// (refused as unimplemented: its flags are in memory the filter cannot read, and
// glibc falls back to clone on ENOSYS).
type archTable struct {
	arch   uint32
	clone  uint32
	clone3 uint32
	denied []uint32
	// x32 refuses every call numbered with the x32 ABI bit: the same calls under
	// other numbers on the x86_64 ABI.
	x32 bool
}

// cloneNamespaces are clone's namespace flags. CLONE_NEWTIME is not among them:
// clone's low byte is the exit signal, and only unshare and clone3 (both refused)
// take it.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccomp_data offsets: the call number, the ABI, the low word of the first argument
// (both architectures built here are little-endian).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

// seccompFilter returns the compiled BPF program bwrap installs (--seccomp) in the
// sandbox just before it runs the command: the calls that change mounts, create or
// join namespaces, reach the kernel keyrings, trace or read other processes, load
// kernel code or programs, reboot, swap, open by file handle or fault on user memory
// are refused with EPERM, for every ABI the kernel accepts from the process (a call
// under an unexpected ABI kills it).
var seccompFilter = sync.OnceValue(func() []byte {
	b, err := assemble(archTables)
	if err != nil {
		panic(err) // the tables are fixed at build time; the tests run this
	}
	return b
})

// insn is one BPF instruction; jt and jf name labels, "" being the next instruction.
type insn struct {
	code   uint16
	k      uint32
	jt, jf string
	label  string // the label of this instruction
}

func ld(off uint32) insn { return insn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off} }
func ret(v uint32) insn  { return insn{code: unix.BPF_RET | unix.BPF_K, k: v} }
func jeq(k uint32, jt string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt}
}

func assemble(tables []archTable) ([]byte, error) {
	var prog []insn
	prog = append(prog, ld(offArch))
	for i, t := range tables {
		prog = append(prog, jeq(t.arch, fmt.Sprintf("abi%d", i)))
	}
	prog = append(prog, ret(unix.SECCOMP_RET_KILL_PROCESS))
	for i, t := range tables {
		first := ld(offNr)
		first.label = fmt.Sprintf("abi%d", i)
		prog = append(prog, first)
		if t.x32 {
			prog = append(prog, insn{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: 0x40000000, jt: "eperm"})
		}
		prog = append(prog, jeq(t.clone, "clone"), jeq(t.clone3, "enosys"))
		for _, nr := range t.denied {
			prog = append(prog, jeq(nr, "eperm"))
		}
		prog = append(prog, ret(unix.SECCOMP_RET_ALLOW))
	}
	clone := ld(offArg0)
	clone.label = "clone"
	prog = append(prog, clone,
		insn{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: cloneNamespaces, jt: "eperm"},
		ret(unix.SECCOMP_RET_ALLOW))
	eperm := ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	eperm.label = "eperm"
	enosys := ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	enosys.label = "enosys"
	prog = append(prog, eperm, enosys)

	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	jump := func(i int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := at[label]
		d := to - i - 1
		if !ok || d < 0 || d > 255 {
			return 0, fmt.Errorf("command: seccomp filter: jump from %d to %q (%d) out of range", i, label, to)
		}
		return uint8(d), nil
	}
	out := make([]byte, 0, 8*len(prog))
	for i, in := range prog {
		jt, err := jump(i, in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := jump(i, in.jf)
		if err != nil {
			return nil, err
		}
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, jt, jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out, nil
}
