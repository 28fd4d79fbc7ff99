//! The socket under a WebSocket, with a [`MessageBudget`] on what the client sends: a message sent in
//! fragments is refused at the header of the fragment that takes it over the limit, before that
//! fragment's payload is read (tungstenite would read it whole first).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::codec::{MessageBudget, OverBudget};
use crate::server::AdmittedSocket;

pub struct BudgetedSocket {
    io: AdmittedSocket,
    budget: MessageBudget,
    max: u64,
    state: Watch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watch {
    Counting,
    /// The next read fails with [`OverBudget`]: what came before the offending header was handed on.
    Refusing,
    /// Refused once; reads pass through untouched (the connection drains the socket as it closes).
    Done,
}

impl BudgetedSocket {
    /// `early`: bytes the client sent with its upgrade request, which tungstenite reads before the
    /// socket. They are counted too, and cut before a header over the limit.
    pub fn new(io: AdmittedSocket, max_message_bytes: usize, early: &mut Vec<u8>) -> Self {
        let mut socket = Self { io, budget: MessageBudget::default(), max: max_message_bytes as u64, state: Watch::Counting };
        if let Err(offset) = socket.budget.observe(early, socket.max) {
            early.truncate(offset);
            socket.state = Watch::Refusing;
        }
        socket
    }
}

impl AsyncRead for BudgetedSocket {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.state {
            Watch::Refusing => {
                this.state = Watch::Done;
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, OverBudget)));
            }
            Watch::Done => return Pin::new(&mut this.io).poll_read(cx, buf),
            Watch::Counting => {}
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) {
            let fresh = &buf.filled()[before..];
            if let Err(offset) = this.budget.observe(fresh, this.max) {
                // Hand on what came before the offending header; refuse at the next read.
                buf.set_filled(before + offset);
                this.state = Watch::Refusing;
                if offset == 0 {
                    this.state = Watch::Done;
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, OverBudget)));
                }
            }
        }
        read
    }
}

impl AsyncWrite for BudgetedSocket {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
