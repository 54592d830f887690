//! Tests of `ktrace`.

use super::*;
use crate::skip::skip;

/// Held by every test of this crate that opens tracefs, so each traces alone.
pub(crate) fn tracefs_serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Two values of one process share the tracefs it mounted: the first dropped leaves it
/// mounted for the other, the last unmounts it.
#[test]
fn a_mount_shared_in_one_process_goes_with_its_last_user() {
    let _serial = tracefs_serial();
    if tracefs_mount(&crate::mount::mounts()).is_some() {
        return skip("needs tracefs mounted nowhere");
    }
    let a = match Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => return skip(&format!("needs tracefs: {e}")),
    };
    let b = Tracefs::open().unwrap();
    assert!(a.mounted_here() && b.mounted_here());
    let mountpoint = a.mountpoint().to_path_buf();
    drop(a);
    assert!(
        tracefs_mounted_on(&mountpoint),
        "unmounted under a value still holding it"
    );
    assert!(mountpoint.join("events").exists() && b.root().join("events").exists());
    drop(b);
    assert!(!tracefs_mounted_on(&mountpoint));
}

#[test]
fn the_syscall_count_is_the_calls_made() {
    let _serial = tracefs_serial();
    let fs = match Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => return skip(&format!("needs tracefs: {e}")),
    };
    let all = match SyscallCounter::open(&fs, None) {
        Ok(c) => c,
        Err(e) => return skip(&format!("not counted here: {e}")),
    };
    let getpid = SyscallCounter::open(&fs, Some(&format!("id == {}", libc::SYS_getpid))).unwrap();
    let call = || {
        for _ in 0..5 {
            crate::calls::raw_getpid();
        }
        crate::calls::raw_getppid();
    };
    assert_eq!(all.count(call).unwrap().1, 6);
    assert_eq!(getpid.count(call).unwrap().1, 5);
    assert_eq!(all.count(|| ()).unwrap().1, 0);
}

#[test]
fn records_missing_are_lost_only_as_far_as_the_kernel_says() {
    // 400 counted, 240 read, nothing dropped: 160 never sampled (an idle CPU's
    // interrupts), none lost.
    assert_eq!(split_missing(160, 0, Some(0)), (0, 160));
    // A full ring: the tally, or the LOST records when they say more.
    assert_eq!(split_missing(160, 0, Some(100)), (100, 60));
    assert_eq!(split_missing(160, 120, Some(100)), (120, 40));
    // Never more lost than missing.
    assert_eq!(split_missing(10, 50, Some(50)), (10, 0));
    // No tally (Linux before 6.0): all missing counts as lost.
    assert_eq!(split_missing(160, 3, None), (160, 0));
}

pub(crate) const SWITCH_FORMAT: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s\", REC->prev_comm
";

const IRQ_FORMAT: &str = "name: irq_handler_entry
ID: 225
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;
";

#[test]
fn a_format_file_gives_id_and_fields() {
    let f = parse_format("sched", SWITCH_FORMAT).unwrap();
    assert_eq!(f.name, "sched:sched_switch");
    assert_eq!(f.id, 372);
    let p = f.field("prev_state").unwrap();
    assert_eq!((p.offset, p.size, p.signed, p.chars), (32, 8, true, false));
    let c = f.field("next_comm").unwrap();
    assert_eq!((c.offset, c.size, c.chars), (40, 16, true));
    let i = parse_format("irq", IRQ_FORMAT).unwrap();
    assert!(i.field("name").unwrap().data_loc);
    assert_eq!(parse_format("x", "garbage"), None);
}

fn switch_raw(prev: &str, prev_pid: i32, state: i64, next: &str, next_pid: i32) -> Vec<u8> {
    let mut r = vec![0u8; 64];
    r[0..2].copy_from_slice(&372u16.to_ne_bytes());
    r[8..8 + prev.len()].copy_from_slice(prev.as_bytes());
    r[24..28].copy_from_slice(&prev_pid.to_ne_bytes());
    r[32..40].copy_from_slice(&state.to_ne_bytes());
    r[40..40 + next.len()].copy_from_slice(next.as_bytes());
    r[56..60].copy_from_slice(&next_pid.to_ne_bytes());
    r
}

#[test]
fn fields_are_read_from_a_raw_record() {
    let f = parse_format("sched", SWITCH_FORMAT).unwrap();
    let raw = switch_raw("oscost-noise", 41, 1, "kworker/0:1", -7);
    assert_eq!(f.string(&raw, "prev_comm").unwrap(), "oscost-noise");
    assert_eq!(f.int(&raw, "prev_pid"), Some(41));
    assert_eq!(f.int(&raw, "prev_state"), Some(1));
    assert_eq!(f.int(&raw, "next_pid"), Some(-7));
    assert_eq!(f.string(&raw, "next_comm").unwrap(), "kworker/0:1");
    assert_eq!(f.int(&raw, "nope"), None);

    let i = parse_format("irq", IRQ_FORMAT).unwrap();
    let mut raw = vec![0u8; 16];
    raw[8..12].copy_from_slice(&36i32.to_ne_bytes());
    let name = b"virtio1-req.0\0";
    raw[12..16].copy_from_slice(&(16u32 | ((name.len() as u32) << 16)).to_ne_bytes());
    raw.extend_from_slice(name);
    assert_eq!(i.int(&raw, "irq"), Some(36));
    assert_eq!(i.string(&raw, "name").unwrap(), "virtio1-req.0");
    // A location past the end reads as nothing rather than panicking.
    raw.truncate(20);
    assert_eq!(i.string(&raw, "name"), None);
}

#[test]
fn perf_records_decode() {
    let raw = switch_raw("a", 1, 0, "b", 2);
    let mut rec = Vec::new();
    let len = 36 + raw.len();
    rec.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
    rec.extend_from_slice(&0u16.to_ne_bytes());
    rec.extend_from_slice(&(len as u16).to_ne_bytes());
    rec.extend_from_slice(&10u32.to_ne_bytes()); // pid
    rec.extend_from_slice(&11u32.to_ne_bytes()); // tid
    rec.extend_from_slice(&123_456_789u64.to_ne_bytes());
    rec.extend_from_slice(&1u32.to_ne_bytes()); // cpu
    rec.extend_from_slice(&0u32.to_ne_bytes());
    rec.extend_from_slice(&(raw.len() as u32).to_ne_bytes());
    rec.extend_from_slice(&raw);
    let Some(Decoded::Sample(s)) = decode(&rec) else {
        panic!("not a sample")
    };
    assert_eq!((s.pid, s.tid, s.time_ns, s.cpu), (10, 11, 123_456_789, 1));
    assert_eq!(s.event_id(), 372);
    assert_eq!(s.raw, raw);

    let mut lost = Vec::new();
    lost.extend_from_slice(&RECORD_LOST.to_ne_bytes());
    lost.extend_from_slice(&0u16.to_ne_bytes());
    lost.extend_from_slice(&24u16.to_ne_bytes());
    lost.extend_from_slice(&7u64.to_ne_bytes());
    lost.extend_from_slice(&42u64.to_ne_bytes());
    assert_eq!(decode(&lost), Some(Decoded::Lost(42)));
    // A truncated sample is refused, not read past its end.
    assert_eq!(decode(&rec[..40]), None);
}

#[test]
fn no_permission_is_one_line_that_says_how_to_get_it() {
    let u = not_permitted(&io::Error::from_raw_os_error(libc::EACCES));
    assert!(!u.0.contains('\n'), "{u}");
    assert!(
        u.0.contains("root") && u.0.contains("perf_event_paranoid"),
        "{u}"
    );
}

#[test]
fn running_out_of_descriptors_is_named_with_its_fix() {
    let e = io::Error::from_raw_os_error(libc::EMFILE);
    assert!(out_of_fds(&e));
    assert!(!out_of_fds(&io::Error::from_raw_os_error(libc::ENOENT)));
    let wrapped = io::Error::other(format!("perf_event_open: {e}"));
    assert!(out_of_fds(&wrapped), "{wrapped}");
    let u = fds_exhausted("sched:sched_switch", &e, 5, 2);
    assert!(
        u.0.contains("open-file limit") && u.0.contains("5 x 2"),
        "{u}"
    );
}

#[test]
fn the_tracefs_mount_is_found_in_the_mount_table() {
    use crate::mount::parse_mountinfo;
    let m = "22 1 0:4 / /proc rw - proc proc rw\n\
             30 1 0:12 / /sys/kernel/tracing rw - tracefs nodev rw\n";
    assert_eq!(
        tracefs_mount(&parse_mountinfo(m)),
        Some(PathBuf::from("/sys/kernel/tracing"))
    );
    // A mount point with a tab in its name is decoded, not taken as `\011`.
    let m = "30 1 0:12 / /mnt/a\\011b rw - tracefs nodev rw\n";
    assert_eq!(
        tracefs_mount(&parse_mountinfo(m)),
        Some(PathBuf::from("/mnt/a\tb"))
    );
    assert_eq!(
        tracefs_mount(&parse_mountinfo("22 1 0:4 / /proc rw - proc proc rw\n")),
        None
    );
}
