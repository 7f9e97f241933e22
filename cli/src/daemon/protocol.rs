//! The daemon's protocol: where it listens and who it is, and the bytes
//! a request and its replies are made of.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// The first bytes of every request: the protocol and its version.
pub(super) const MAGIC: &[u8; 8] = b"DSRD\0\0\0\x01";

/// The longest request accepted (arguments, environment, working directory).
pub(super) const MAX_REQUEST: usize = 16 << 20;
/// The exit code of a command whose output was closed under it (as a
/// process killed by `SIGPIPE`, which the caller then is).
pub(super) const BROKEN_PIPE: i32 = 128 + libc::SIGPIPE;

/// What a request asks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Run = b'R' as isize,
    Status = b'S' as isize,
    Stop = b'Q' as isize,
}

// ---------------------------------------------------------------------------
// Where the daemon listens, and who it is.

/// The daemon's directory: `$XDG_RUNTIME_DIR/dsh-session-ref`, else
/// `dsh-session-ref-<uid>` in the temporary directory.
pub(super) fn home_path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|d| d.is_absolute()) {
        Some(runtime) => runtime.join("dsh-session-ref"),
        None => std::env::temp_dir().join(format!("dsh-session-ref-{}", euid())),
    }
}

/// The daemon's directory ([`home_path`]) for the daemon: made 0700, and
/// refused when it is a link, another user's or writable by others.
pub(super) fn home() -> Result<PathBuf, String> {
    let dir = home_path();
    dsh_session_reference::wire::private_dir(&dir)?;
    Ok(dir)
}

/// This build: the version, and the executable file's device, inode, size
/// and modification time (a rebuilt or upgraded binary is another build).
pub(super) fn build_identity() -> Vec<u8> {
    let stamp = std::fs::metadata("/proc/self/exe")
        .or_else(|_| std::env::current_exe().and_then(std::fs::metadata))
        .map(|m| format!("{}:{}:{}:{}.{}", m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
        .unwrap_or_default();
    format!("{} {stamp}", env!("CARGO_PKG_VERSION")).into_bytes()
}

/// The user id of the process at the other end of `stream`.
pub(super) fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of a `ucred`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

pub(super) fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// A connection to this user's daemon, if one listens (nothing is created
/// to look: a command with no daemon costs one failed `connect`).
pub(super) fn connect() -> Option<UnixStream> {
    try_connect().ok()
}

/// [`connect`], saying why none answers: `NotFound` (no socket) or
/// `ConnectionRefused` (a socket file no daemon listens on) mean that
/// none runs; any other error, that something is wrong with the directory.
pub(super) fn try_connect() -> io::Result<UnixStream> {
    let socket = home_path().join("daemon.sock");
    let stream = UnixStream::connect(socket)?;
    // A socket another user could have put there is never trusted.
    if peer_uid(&stream)? != euid() {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "a socket of another user"));
    }
    Ok(stream)
}

// ---------------------------------------------------------------------------
// The wire: a request is a length and its bytes (the caller's descriptors
// ride with its first bytes); each field is a length and its bytes.

#[derive(Default)]
pub(super) struct Frame(Vec<u8>);

impl Frame {
    pub(super) fn put(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.0.extend_from_slice(bytes);
        self
    }
    pub(super) fn framed(&self) -> Vec<u8> {
        let mut out = (self.0.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&self.0);
        out
    }
}

/// Reads the fields of a frame in turn.
pub(super) struct Fields<'a>(pub(super) &'a [u8]);

impl<'a> Fields<'a> {
    pub(super) fn next(&mut self) -> io::Result<&'a [u8]> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "a malformed request");
        let len = self.0.get(..4).ok_or_else(bad)?;
        let len = u32::from_le_bytes(len.try_into().map_err(|_| bad())?) as usize;
        let field = self.0.get(4..4 + len).ok_or_else(bad)?;
        self.0 = &self.0[4 + len..];
        Ok(field)
    }
    pub(super) fn count(&mut self) -> io::Result<usize> {
        let field = self.next()?;
        let bytes: [u8; 4] =
            field.try_into().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a malformed count"))?;
        Ok(u32::from_le_bytes(bytes) as usize)
    }
}

/// Sends `data` with the descriptors `fds` attached to its first bytes.
pub(super) fn send_with_fds(stream: &UnixStream, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let payload = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives
    // the sendmsg call, and the control buffer holds one header of
    // CMSG_SPACE(payload) bytes, written through CMSG_FIRSTHDR/CMSG_DATA.
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(payload as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(cmsg), payload);
        libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    (&*stream).write_all(&data[sent as usize..])
}

/// Receives the first bytes of a request into `buf` and the descriptors
/// that came with them (at most three).
pub(super) fn receive_with_fds(stream: &UnixStream, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(3 * std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut fds = Vec::new();
    // SAFETY: as in `send_with_fds`; each descriptor the kernel put in the
    // control buffer is new to this process and owned once, here.
    let got = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let got = libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "too many descriptors"));
        }
        got as usize
    };
    Ok((got, fds))
}

/// Reads one reply: its kind and its bytes.
pub(super) fn read_reply(stream: &mut UnixStream) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    stream.read_exact(&mut head)?;
    let len = u32::from_le_bytes(head[1..].try_into().expect("four bytes")) as usize;
    let mut body = vec![0u8; len.min(MAX_REQUEST)];
    stream.read_exact(&mut body)?;
    Ok((head[0], body))
}

pub(super) fn write_reply(stream: &mut UnixStream, kind: u8, body: &[u8]) -> io::Result<()> {
    let mut out = vec![kind];
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    stream.write_all(&out)
}

/// The lock a daemon holds for its whole life (`daemon.lock` in its
/// directory `dir`), taken without waiting: `None` when another holds it
/// (a daemon runs, or is starting).
pub(super) fn take_lock(dir: &std::path::Path) -> Result<Option<std::fs::File>, String> {
    let lock = private_file(&dir.join("daemon.lock"), false)?;
    Ok(locked(&lock).then_some(lock))
}

/// Whether `file` is now locked through this descriptor (taken without
/// waiting; already held through it counts).
pub(super) fn locked(file: &std::fs::File) -> bool {
    // SAFETY: flock on an open descriptor.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// `path` in the daemon's directory opened for writing, created 0600,
/// never through a symbolic link; emptied when `truncate`.
pub(super) fn private_file(path: &std::path::Path, truncate: bool) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(truncate)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_reject_truncation() {
        let mut frame = Frame::default();
        frame.put(b"abc").put(b"").put(&7u32.to_le_bytes());
        let framed = frame.framed();
        let mut fields = Fields(&framed[4..]);
        assert_eq!(fields.next().unwrap(), b"abc");
        assert_eq!(fields.next().unwrap(), b"");
        assert_eq!(fields.count().unwrap(), 7);
        assert!(fields.next().is_err());
        let mut short = Fields(&framed[4..framed.len() - 1]);
        short.next().unwrap();
        short.next().unwrap();
        assert!(short.next().is_err());
    }
}
