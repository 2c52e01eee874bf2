//! Senders mark their packets with their tenant's priority: the DSCP of the level
//! ([`tailbound_enforce_plan::dscp_for_priority`]) in the TOS byte of every IPv4 packet a
//! socket sends (`IP_TOS`). Switch ports classify on it with u32 (the plan's level filters);
//! end hosts classify by addresses and ports and need no mark.
//!
//! Used by the probe's clients (`tailbound probe ... --priority P` or `--tos T`) and by any
//! client that sends tenant traffic. For TCP servers, the kernel can reflect a connection's
//! TOS into its replies (`sysctl net.ipv4.tcp_reflect_tos=1`, per namespace).

use std::io;
use std::os::fd::AsRawFd;

/// Sets the TOS byte of the packets `socket` sends (IPv4).
pub fn set_tos(socket: &impl AsRawFd, tos: u8) -> io::Result<()> {
    let value = libc::c_int::from(tos);
    // SAFETY: a valid fd and a pointer to an int of the given size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_TOS,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The TOS byte `socket` sends with.
pub fn tos(socket: &impl AsRawFd) -> io::Result<u8> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid fd and a pointer to an int with its length.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_TOS,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value as u8)
}

/// The TOS byte of a priority level, or an error naming the levels that have one.
pub fn tos_for(priority: u32) -> io::Result<u8> {
    tailbound_enforce_plan::tos_for_priority(priority).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "priority {priority} has no DSCP; levels 0 to {} do",
                tailbound_enforce_plan::MAX_PRIORITY
            ),
        )
    })
}

/// Marks `socket` with the DSCP of `priority`; returns the TOS byte set.
pub fn mark(socket: &impl AsRawFd, priority: u32) -> io::Result<u8> {
    let t = tos_for(priority)?;
    set_tos(socket, t)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn a_marked_socket_sends_its_levels_dscp() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(tos(&s).unwrap(), 0);
        assert_eq!(mark(&s, 0).unwrap(), 0xfc);
        assert_eq!(tos(&s).unwrap(), 0xfc);
        mark(&s, 5).unwrap();
        assert_eq!(tos(&s).unwrap() >> 2, 58);
        let e = mark(&s, 63).unwrap_err();
        assert!(e.to_string().contains("63"), "{e}");
    }

    #[test]
    fn marked_datagrams_arrive_with_the_tos_they_left_with() {
        // the receiver reads the TOS of each datagram (IP_RECVTOS)
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let on: libc::c_int = 1;
        // SAFETY: valid fd and int option.
        let rc = unsafe {
            libc::setsockopt(
                rx.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_RECVTOS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        mark(&tx, 3).unwrap();
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        let mut data = [0u8; 8];
        let mut control = [0u8; 64];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        // SAFETY: zeroed msghdr, then pointers to live buffers.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len() as _;
        // SAFETY: valid fd and msghdr.
        let n = unsafe { libc::recvmsg(rx.as_raw_fd(), &mut msg, 0) };
        assert_eq!(n, 1);
        // SAFETY: walking the control buffer the kernel filled, with its own macros.
        let tos = unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            assert!(!cmsg.is_null());
            assert_eq!(
                ((*cmsg).cmsg_level, (*cmsg).cmsg_type),
                (libc::IPPROTO_IP, libc::IP_TOS)
            );
            *libc::CMSG_DATA(cmsg)
        };
        assert_eq!(tos, tos_for(3).unwrap());
    }
}
