// Applies two of the unit's settings to one command, the way systemd does, then execs it:
//   --families          RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX (socket() of another family: EAFNOSUPPORT)
//   --netlink           ... plus AF_NETLINK
//   --mdwe-seccomp      MemoryDenyWriteExecute=yes as systemd 252 applies it (seccomp: mmap W+X,
//                       mprotect/pkey_mprotect +X, shmat SHM_EXEC fail with EPERM)
//   --mdwe-prctl        MemoryDenyWriteExecute=yes as systemd >= 254 prefers (prctl PR_SET_MDWE, Linux >= 6.3)
// Always sets no_new_privs (NoNewPrivileges=yes). x86-64 only.
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARG(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define LOAD(off) (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define RET(v) (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, (v))
#define JEQ(k, t, f) (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define JSET(k, t, f) (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (k), (t), (f))
#define DENY(e) RET(SECCOMP_RET_ERRNO | (e))
#define ALLOW RET(SECCOMP_RET_ALLOW)

int main(int argc, char **argv) {
  int families = 0, netlink = 0, mdwe_seccomp = 0, mdwe_prctl = 0, i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (!strcmp(argv[i], "--families")) families = 1;
    else if (!strcmp(argv[i], "--netlink")) netlink = 1;
    else if (!strcmp(argv[i], "--mdwe-seccomp")) mdwe_seccomp = 1;
    else if (!strcmp(argv[i], "--mdwe-prctl")) mdwe_prctl = 1;
    else { fprintf(stderr, "filter: unknown option %s\n", argv[i]); return 2; }
  }
  if (i + 1 >= argc) { fprintf(stderr, "usage: filter [options] -- command [args]\n"); return 2; }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) { perror("filter: no_new_privs"); return 1; }
  if (mdwe_prctl && prctl(65 /* PR_SET_MDWE */, 1 /* PR_MDWE_REFUSE_EXEC_GAIN */, 0, 0, 0)) { perror("filter: PR_SET_MDWE"); return 1; }
  struct sock_filter f[40];
  int n = 0;
  f[n++] = LOAD(offsetof(struct seccomp_data, arch));
  f[n++] = JEQ(AUDIT_ARCH_X86_64, 1, 0);
  f[n++] = RET(SECCOMP_RET_KILL_PROCESS);
  f[n++] = LOAD(offsetof(struct seccomp_data, nr));
  if (mdwe_seccomp) {
    f[n++] = JEQ(SYS_mmap, 0, 5);
    f[n++] = LOAD(ARG(2));
    f[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC);
    f[n++] = JEQ(PROT_WRITE | PROT_EXEC, 0, 1);
    f[n++] = DENY(EPERM);
    f[n++] = ALLOW;
    f[n++] = JEQ(SYS_mprotect, 1, 0);
    f[n++] = JEQ(SYS_pkey_mprotect, 0, 4);
    f[n++] = LOAD(ARG(2));
    f[n++] = JSET(PROT_EXEC, 0, 1);
    f[n++] = DENY(EPERM);
    f[n++] = ALLOW;
    f[n++] = JEQ(SYS_shmat, 0, 4);
    f[n++] = LOAD(ARG(2));
    f[n++] = JSET(SHM_EXEC, 0, 1);
    f[n++] = DENY(EPERM);
    f[n++] = ALLOW;
  }
  if (families) {
    f[n++] = JEQ(SYS_socket, 0, 7);
    f[n++] = LOAD(ARG(0));
    f[n++] = JEQ(1 /* AF_UNIX */, 4, 0);
    f[n++] = JEQ(2 /* AF_INET */, 3, 0);
    f[n++] = JEQ(10 /* AF_INET6 */, 2, 0);
    f[n++] = JEQ(netlink ? 16 /* AF_NETLINK */ : 1, 1, 0);
    f[n++] = DENY(EAFNOSUPPORT);
    f[n++] = ALLOW;
  }
  f[n++] = ALLOW;
  struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) { perror("filter: seccomp"); return 1; }
  execvp(argv[i + 1], argv + i + 1);
  perror("filter: execvp");
  return 127;
}
