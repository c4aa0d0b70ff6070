//! The unit tests of the x86-64 decoding syscost's QEMU plugin does on every instruction it
//! translates (csrc/x86_decode.h, linked in by build.rs): the plugin's own C, called on the
//! bytes GNU as assembles each form to.

#[cfg(test)]
mod unit {
    unsafe extern "C" {
        fn syscost_locked(d: *const u8, n: usize) -> bool;
        fn syscost_branch(d: *const u8, n: usize) -> bool;
        fn syscost_conditional(d: *const u8, n: usize) -> bool;
        fn syscost_iretq(d: *const u8, n: usize) -> bool;
        fn syscost_mark_of(d: *const u8, n: usize) -> i32;
    }

    fn call<T>(f: unsafe extern "C" fn(*const u8, usize) -> T, d: &[u8]) -> T {
        // SAFETY: the functions read `n` bytes from `d` and keep nothing.
        unsafe { f(d.as_ptr(), d.len()) }
    }

    /// Every locked form is an atomic read-modify-write, in any order of its prefixes, and so
    /// is XCHG with memory (locked without the prefix); the same operations unlocked, XCHG of
    /// two registers and other instructions are not.
    #[test]
    fn atomics_are_the_locked_forms_and_xchg_with_memory() {
        let atomic: [(&str, &[u8]); 22] = [
            ("lock addl $1,(%rdi)", &[0xf0, 0x83, 0x07, 0x01]),
            ("lock incl 8(%rdi)", &[0xf0, 0xff, 0x47, 0x08]),
            ("lock decq (%rax)", &[0xf0, 0x48, 0xff, 0x08]),
            ("lock xadd %eax,(%rdi)", &[0xf0, 0x0f, 0xc1, 0x07]),
            ("lock cmpxchg %rsi,(%rdi)", &[0xf0, 0x48, 0x0f, 0xb1, 0x37]),
            ("lock cmpxchg8b (%rdi)", &[0xf0, 0x0f, 0xc7, 0x0f]),
            ("lock cmpxchg16b (%rdi)", &[0xf0, 0x48, 0x0f, 0xc7, 0x0f]),
            ("lock btsq $3,(%rdi)", &[0xf0, 0x48, 0x0f, 0xba, 0x2f, 0x03]),
            ("lock btr %rax,(%rdi)", &[0xf0, 0x48, 0x0f, 0xb3, 0x07]),
            ("lock btcl $1,(%rdi)", &[0xf0, 0x0f, 0xba, 0x3f, 0x01]),
            ("lock and %eax,(%rdi)", &[0xf0, 0x21, 0x07]),
            ("lock orb $1,(%rdi)", &[0xf0, 0x80, 0x0f, 0x01]),
            ("lock xor %ax,(%rdi)", &[0x66, 0xf0, 0x31, 0x07]),
            (
                "lock subq $1,0x10(%rdi,%rcx,8)",
                &[0xf0, 0x48, 0x83, 0x6c, 0xcf, 0x10, 0x01],
            ),
            ("lock adcl $1,(%rdi)", &[0xf0, 0x83, 0x17, 0x01]),
            ("lock negl (%rdi)", &[0xf0, 0xf7, 0x1f]),
            ("lock notq (%rdi)", &[0xf0, 0x48, 0xf7, 0x17]),
            (
                "lock incl %gs:0x20",
                &[0x65, 0xf0, 0xff, 0x04, 0x25, 0x20, 0, 0, 0],
            ),
            (
                "the same, lock first",
                &[0xf0, 0x65, 0xff, 0x04, 0x25, 0x20, 0, 0, 0],
            ),
            ("xchg %eax,(%rdi)", &[0x87, 0x07]),
            ("xchg %al,(%rdi)", &[0x86, 0x07]),
            ("xchg %r8,0x8(%r9)", &[0x4d, 0x87, 0x41, 0x08]),
        ];
        for (what, bytes) in atomic {
            assert!(call(syscost_locked, bytes), "{what} is atomic");
        }
        let not: [(&str, &[u8]); 10] = [
            ("xchg %rax,%rbx", &[0x48, 0x93]),
            ("xchg %eax,%ecx", &[0x91]),
            ("xchg %rbx,%rcx", &[0x48, 0x87, 0xd9]),
            ("cmpxchg %rsi,(%rdi)", &[0x48, 0x0f, 0xb1, 0x37]),
            ("addl $1,(%rdi)", &[0x83, 0x07, 0x01]),
            ("mov (%rdi),%rax", &[0x48, 0x8b, 0x07]),
            ("xadd %eax,(%rdi)", &[0x0f, 0xc1, 0x07]),
            ("btsq $3,(%rdi)", &[0x48, 0x0f, 0xba, 0x2f, 0x03]),
            ("incl %gs:0x20", &[0x65, 0xff, 0x04, 0x25, 0x20, 0, 0, 0]),
            ("a lone xchg opcode, cut short", &[0x87]),
        ];
        for (what, bytes) in not {
            assert!(!call(syscost_locked, bytes), "{what} is not atomic");
        }
        assert!(!call(syscost_locked, &[]));
    }

    /// The branches perf counts, the conditional ones among them, IRETQ, and syscost's marks.
    #[test]
    fn branches_returns_and_marks_are_told_apart() {
        let jcc: &[u8] = &[0x0f, 0x85, 0, 0, 0, 0];
        assert!(call(syscost_conditional, jcc) && call(syscost_branch, jcc));
        assert!(call(syscost_conditional, &[0x74, 0x05]));
        let call_indirect: &[u8] = &[0xff, 0xd0];
        assert!(!call(syscost_conditional, call_indirect) && call(syscost_branch, call_indirect));
        assert!(call(syscost_branch, &[0xc3]), "ret");
        assert!(call(syscost_branch, &[0x0f, 0x05]), "syscall");
        assert!(!call(syscost_branch, &[0xff, 0x07]), "incl (%rdi) is ff /0");
        assert!(call(syscost_iretq, &[0x48, 0xcf]));
        assert!(!call(syscost_iretq, &[0xcf]), "a 32-bit iret");
        let begin: &[u8] = &[0x0f, 0x1f, 0x80, 0x01, 0xc0, 0x05, 0x5c];
        assert_eq!(call(syscost_mark_of, begin), 1);
        let other: &[u8] = &[0x0f, 0x1f, 0x80, 0x01, 0xc0, 0x05, 0x5d];
        assert_eq!(call(syscost_mark_of, other), 0);
        let doze: &[u8] = &[0x0f, 0x1f, 0x80, 0x06, 0xc0, 0x05, 0x5c];
        assert_eq!(call(syscost_mark_of, doze), 6);
        let span: &[u8] = &[0x0f, 0x1f, 0x80, 0x08, 0xc0, 0x05, 0x5c];
        assert_eq!(call(syscost_mark_of, span), 8);
        let beyond: &[u8] = &[0x0f, 0x1f, 0x80, 0x09, 0xc0, 0x05, 0x5c];
        assert_eq!(call(syscost_mark_of, beyond), 0);
    }
}
