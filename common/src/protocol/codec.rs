//! The frame codec: length-prefixed bincode frames, the incremental
//! [`Decoder`], the hello check and the file codec. The only place in the
//! workspace that calls bincode.

use serde::{de::DeserializeOwned, Serialize};
use thiserror::Error;

use super::messages::{Hello, MAGIC};

/// Largest frame accepted (bytes of payload). Histogram hand-overs are the
/// biggest messages (a few KB per histogram); 4 MiB leaves ample room and
/// bounds what a stranger can make us buffer.
pub const MAX_FRAME: usize = 4 << 20;

/// Bytes of the length prefix.
pub const LEN_PREFIX: usize = 4;

/// What can go wrong with bytes from a peer. Every variant means: close the
/// connection.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// The length prefix announces more than [`MAX_FRAME`].
    #[error("frame of {len} bytes exceeds the {max}-byte limit")]
    FrameTooLarge {
        /// Announced length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The payload is not a valid message of the expected type.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// What was expected.
        what: &'static str,
        /// The decoder's complaint.
        detail: String,
    },
    /// A frame decoded but left bytes over: not our encoding.
    #[error("malformed {what}: {extra} trailing bytes")]
    Trailing {
        /// What was expected.
        what: &'static str,
        /// Bytes left over.
        extra: usize,
    },
    /// The hello's magic is wrong: the peer is not a Libratory process.
    #[error("peer is not a Libratory process (bad magic in hello)")]
    NotLibratory,
    /// The peer speaks another protocol version.
    #[error("protocol version mismatch: peer ({software}) speaks {theirs}, we speak {ours}")]
    Version {
        /// Theirs.
        theirs: u32,
        /// Ours.
        ours: u32,
        /// What the peer said it is.
        software: String,
    },
    /// The stream ended in the middle of a frame.
    #[error("connection closed in the middle of a frame ({have} of {want} bytes)")]
    Truncated {
        /// Bytes received.
        have: usize,
        /// Bytes announced.
        want: usize,
    },
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_FRAME>()
}

/// Encodes one message as a whole frame (length prefix included).
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode_append(&mut out, msg);
    out
}

/// The payload bytes `msg` takes in a frame. A sender whose message can
/// grow with the cluster (a status answer lists every node) checks it
/// against [`MAX_FRAME`] and answers otherwise, rather than fail to
/// encode.
pub fn payload_len<T: Serialize>(msg: &T) -> usize {
    bincode::serde::encode_to_vec(msg, config())
        .expect("encoding to a Vec cannot fail")
        .len()
}

/// Appends `msg`'s frame (length prefix and payload) to `out`: several
/// frames in one buffer go out in one write.
pub fn encode_append<T: Serialize>(out: &mut Vec<u8>, msg: &T) {
    let start = out.len();
    out.extend_from_slice(&[0u8; LEN_PREFIX]);
    bincode::serde::encode_into_std_write(msg, out, config())
        .expect("writing to a Vec cannot fail and every message is bounded");
    let len = out.len() - start - LEN_PREFIX;
    assert!(len <= MAX_FRAME, "message of {len} bytes exceeds MAX_FRAME");
    out[start..start + LEN_PREFIX].copy_from_slice(&(len as u32).to_be_bytes());
}

/// Decodes one payload (without its length prefix).
pub fn decode_payload<T: DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, ProtocolError> {
    let (v, used) = bincode::serde::decode_from_slice(bytes, config()).map_err(|e| {
        ProtocolError::Malformed {
            what,
            detail: e.to_string(),
        }
    })?;
    if used != bytes.len() {
        return Err(ProtocolError::Trailing {
            what,
            extra: bytes.len() - used,
        });
    }
    Ok(v)
}

/// The same codec for local files that are not messages (the manager's
/// parsed-trace cache): no frame, a limit of [`MAX_FILE_VALUE`] instead of
/// [`MAX_FRAME`], and fixed-width integers instead of varints (a file is
/// read far more often than written, and the 5,000-record SDSC window
/// decodes in about half the time: ~0.5 ms instead of ~1.1 ms, for a file
/// 2.8 times larger). Kept here so that bincode stays behind this module.
pub const MAX_FILE_VALUE: usize = 1 << 30;

/// The file codec's configuration (see [`MAX_FILE_VALUE`]).
fn file_config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_fixed_int_encoding()
        .with_limit::<MAX_FILE_VALUE>()
}

/// Encodes a value for a local file (see [`MAX_FILE_VALUE`]).
pub fn encode_file_value<T: Serialize>(
    what: &'static str,
    value: &T,
) -> Result<Vec<u8>, ProtocolError> {
    let config = file_config();
    bincode::serde::encode_to_vec(value, config).map_err(|e| ProtocolError::Malformed {
        what,
        detail: e.to_string(),
    })
}

/// Decodes [`encode_file_value`]'s bytes, all of them.
pub fn decode_file_value<T: DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, ProtocolError> {
    let config = file_config();
    let (v, used) =
        bincode::serde::decode_from_slice(bytes, config).map_err(|e| ProtocolError::Malformed {
            what,
            detail: e.to_string(),
        })?;
    if used != bytes.len() {
        return Err(ProtocolError::Trailing {
            what,
            extra: bytes.len() - used,
        });
    }
    Ok(v)
}

/// Incremental frame splitter: feed it bytes as they arrive, take whole
/// payloads out. Refuses an oversize length prefix as soon as it is seen.
///
/// Taken frames are skipped over by an offset, not drained: one read of a
/// busy stream holds hundreds of small frames, and removing each from the
/// front would move the rest every time (quadratic in the frames per
/// read). The consumed prefix is dropped when more bytes are fed.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already returned.
    pos: usize,
}

impl Decoder {
    /// An empty decoder.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Appends received bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The byte range of the next whole payload in `buf`, if one has
    /// arrived; it is then consumed.
    fn next_range(&mut self) -> Result<Option<std::ops::Range<usize>>, ProtocolError> {
        let rest = &self.buf[self.pos..];
        let Some(len) = announced_len(rest) else {
            return Ok(None);
        };
        if len > MAX_FRAME {
            return Err(ProtocolError::FrameTooLarge {
                len,
                max: MAX_FRAME,
            });
        }
        if rest.len() < LEN_PREFIX + len {
            return Ok(None);
        }
        let start = self.pos + LEN_PREFIX;
        self.pos = start + len;
        Ok(Some(start..start + len))
    }

    /// The next whole payload, if one has arrived.
    pub fn next_payload(&mut self) -> Result<Option<Vec<u8>>, ProtocolError> {
        Ok(self.next_range()?.map(|r| self.buf[r].to_vec()))
    }

    /// The next whole message of type `T`.
    pub fn next<T: DeserializeOwned>(
        &mut self,
        what: &'static str,
    ) -> Result<Option<T>, ProtocolError> {
        match self.next_range()? {
            Some(r) => decode_payload(what, &self.buf[r]).map(Some),
            None => Ok(None),
        }
    }

    /// Call at end of stream: an error if a frame was cut short.
    pub fn finish(&self) -> Result<(), ProtocolError> {
        let rest = &self.buf[self.pos..];
        if rest.is_empty() {
            return Ok(());
        }
        let want = LEN_PREFIX + announced_len(rest).unwrap_or(0);
        Err(ProtocolError::Truncated {
            have: rest.len(),
            want,
        })
    }

    /// Bytes buffered and not yet returned.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }
}

/// The payload length a frame's prefix announces, once the prefix is whole.
fn announced_len(bytes: &[u8]) -> Option<usize> {
    let prefix: [u8; LEN_PREFIX] = bytes.get(..LEN_PREFIX)?.try_into().ok()?;
    Some(u32::from_be_bytes(prefix) as usize)
}

/// Decodes and checks a hello payload: the first frame of a connection.
pub fn decode_hello(payload: &[u8]) -> Result<Hello, ProtocolError> {
    // A stranger's first bytes rarely decode as a hello at all; check the
    // magic first so the error says "not a Libratory process" when it can.
    if payload.len() < 4 || payload[..4] != MAGIC {
        return Err(ProtocolError::NotLibratory);
    }
    let h: Hello = decode_payload("hello", payload)?;
    h.check()?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::super::messages::*;
    use super::*;
    use crate::job::JobSpec;
    use crate::policy::Decision;
    use crate::share::SpareRule;

    #[test]
    fn payload_len_is_the_frame_less_its_prefix() {
        let m = ManagerMsg::Ping { nonce: 7 };
        assert_eq!(payload_len(&m), encode(&m).len() - LEN_PREFIX);
        let big = NodeMsg::Goodbye {
            reason: "x".repeat(1000),
        };
        assert_eq!(payload_len(&big), encode(&big).len() - LEN_PREFIX);
    }

    fn all_node_msgs() -> Vec<NodeMsg> {
        let part = PartId { job: 42, index: 3 };
        vec![
            NodeMsg::Register {
                host: "lab-1".into(),
                nodes: vec![NodeInfo {
                    local: 0,
                    capacity: 0.25,
                    speed: 1.5,
                    memory_kb: 1 << 20,
                    disk_mb: 100,
                }],
                pid: 4242,
            },
            NodeMsg::Heartbeat { seq: 7 },
            NodeMsg::Progress {
                at: 12.5,
                parts: vec![PartProgress {
                    part,
                    node: 1,
                    work_done: 3.25,
                    share: 0.5,
                }],
            },
            NodeMsg::Started {
                part,
                at: 1.0,
                dispatched_at: 0.5,
            },
            NodeMsg::Completed {
                part,
                at: 2.0,
                cpu_seconds: 0.001,
            },
            NodeMsg::Refused {
                part,
                reason: "no node 9".into(),
            },
            NodeMsg::Histograms {
                last: true,
                histograms: vec![("tick_jitter".into(), vec![1, 2, 3])],
            },
            NodeMsg::Pong { nonce: 9 },
            NodeMsg::Goodbye {
                reason: "done".into(),
            },
            NodeMsg::Withdrawn {
                part,
                at: 3.0,
                cpu_seconds: 0.5,
            },
            NodeMsg::Reports {
                reports: vec![
                    NodeProgress {
                        at: 3.5,
                        parts: vec![PartProgress {
                            part,
                            node: 7,
                            work_done: 1.0,
                            share: 0.25,
                        }],
                    },
                    NodeProgress {
                        at: 3.75,
                        parts: vec![],
                    },
                ],
            },
            NodeMsg::Rejoin(Rejoin {
                was: vec![4, 5],
                away_s: 2.5,
                why: "the manager at 127.0.0.1:1 closed the link".into(),
                running: vec![HeldPart {
                    part,
                    node: 1,
                    work_done: 0.5,
                    share: 0.25,
                    started_at: 1.0,
                }],
                finished: vec![FinishedPart {
                    part: PartId { job: 43, index: 0 },
                    node: 0,
                    at: 4.0,
                    cpu_seconds: 0.125,
                }],
                down: vec![DownNode {
                    node: 1,
                    crashed: true,
                    silent_s: 0.75,
                }],
            }),
            NodeMsg::Silent { nodes: vec![3, 9] },
            NodeMsg::RejoinPiece {
                running: vec![HeldPart {
                    part,
                    node: 2,
                    work_done: 0.25,
                    share: 0.5,
                    started_at: 1.5,
                }],
                finished: vec![],
            },
        ]
    }

    fn all_manager_msgs() -> Vec<ManagerMsg> {
        let part = PartId { job: 1, index: 0 };
        vec![
            ManagerMsg::Welcome(Welcome {
                node_ids: vec![4, 5],
                time_scale: 1e-3,
                trace_now: 100.0,
                spare_rule: SpareRule::Proportional,
                report_ms: 100,
                heartbeat_ms: 250,
                histogram_ms: 10_000,
            }),
            ManagerMsg::Reject {
                reason: "full".into(),
            },
            ManagerMsg::Dispatch(Dispatch {
                part,
                node: 0,
                estimate: 10.0,
                actual: 8.0,
                deadline: 50.0,
                dispatched_at: 1.0,
                exclusive: false,
                ret: 0.5,
                hard: true,
            }),
            ManagerMsg::Cancel { part },
            ManagerMsg::Ping { nonce: 1 },
            ManagerMsg::SendHistograms,
            ManagerMsg::Shutdown {
                reason: "end".into(),
            },
            ManagerMsg::Dispatches(vec![Dispatch {
                part,
                node: 1,
                estimate: 1.0,
                actual: 1.0,
                deadline: 5.0,
                dispatched_at: 0.5,
                exclusive: true,
                ret: 0.0,
                hard: false,
            }]),
            ManagerMsg::RejoinAnswer {
                keep: vec![part],
                reason: "unknown to this manager".into(),
            },
            ManagerMsg::NodeLost {
                node: 4,
                reason: "silent".into(),
            },
            ManagerMsg::RejoinKept { keep: vec![part] },
        ]
    }

    /// A rejoin of 100,007 running and 3 finished parts, with the
    /// largest ids (the most bytes a part takes), goes out as two pieces
    /// of 50,000 and a `Rejoin` of the last 10, each within `MAX_FRAME`;
    /// the pieces' parts and then the `Rejoin`'s are the rejoin's, in
    /// order. Its answer keeping 100,001 parts goes as two `RejoinKept`
    /// of 50,000 and the answer with the last one; an empty rejoin and an
    /// empty answer are one frame each.
    #[test]
    fn rejoins_and_their_answers_larger_than_a_frame_go_in_pieces() {
        let id = |k: usize| PartId {
            job: u64::MAX - k as u64,
            index: u32::MAX,
        };
        let running: Vec<HeldPart> = (0..100_007)
            .map(|k| HeldPart {
                part: id(k),
                node: u32::MAX,
                work_done: k as f64,
                share: 0.5,
                started_at: 1.0,
            })
            .collect();
        let finished: Vec<FinishedPart> = (0..3)
            .map(|k| FinishedPart {
                part: id(200_000 + k),
                node: u32::MAX,
                at: 2.0,
                cpu_seconds: 0.25,
            })
            .collect();
        let r = Rejoin {
            was: (0..20_000).map(|n| u32::MAX - n).collect(),
            away_s: 1.0,
            why: "lost".into(),
            running,
            finished,
            down: vec![],
        };
        let frames = r.clone().into_frames();
        let sizes: Vec<usize> = frames
            .iter()
            .map(|f| match f {
                NodeMsg::RejoinPiece { running, finished } => running.len() + finished.len(),
                NodeMsg::Rejoin(r) => r.running.len() + r.finished.len(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(sizes, [50_000, 50_000, 10]);
        let (mut running, mut finished) = (Vec::new(), Vec::new());
        for f in frames {
            assert!(encode(&f).len() <= MAX_FRAME + 4);
            match f {
                NodeMsg::RejoinPiece {
                    running: r,
                    finished: f,
                } => {
                    running.extend(r);
                    finished.extend(f);
                }
                NodeMsg::Rejoin(mut last) => {
                    running.extend(last.running);
                    finished.extend(last.finished);
                    (last.running, last.finished) = (running, finished);
                    assert_eq!(last, r);
                    break;
                }
                _ => unreachable!(),
            }
        }
        let keep: Vec<PartId> = (0..100_001).map(id).collect();
        let answer = ManagerMsg::rejoin_answer(keep.clone(), "why".into());
        let mut got: Vec<PartId> = Vec::new();
        for (k, f) in answer.iter().enumerate() {
            assert!(encode(f).len() <= MAX_FRAME + 4);
            match f {
                ManagerMsg::RejoinKept { keep } if k < 2 => {
                    assert_eq!(keep.len(), 50_000);
                    got.extend(keep);
                }
                ManagerMsg::RejoinAnswer { keep, reason } if k == 2 => {
                    assert_eq!((keep.len(), reason.as_str()), (1, "why"));
                    got.extend(keep);
                }
                other => panic!("frame {k}: {other:?}"),
            }
        }
        assert_eq!(got, keep);
        let empty = Rejoin {
            running: vec![],
            finished: vec![],
            ..r
        };
        assert_eq!(empty.clone().into_frames(), [NodeMsg::Rejoin(empty)]);
        assert_eq!(
            ManagerMsg::rejoin_answer(vec![], "none".into()),
            [ManagerMsg::RejoinAnswer {
                keep: vec![],
                reason: "none".into()
            }]
        );
    }

    #[test]
    fn every_message_round_trips_through_frames() {
        let mut d = Decoder::new();
        let h = Hello::new(Role::Node, "libratory-node 0.1.0");
        d.feed(&encode(&h));
        for m in all_node_msgs() {
            d.feed(&encode(&m));
        }
        let got = decode_hello(&d.next_payload().unwrap().unwrap()).unwrap();
        assert_eq!(got, h);
        for m in all_node_msgs() {
            assert_eq!(d.next::<NodeMsg>("node message").unwrap(), Some(m));
        }
        assert_eq!(d.next::<NodeMsg>("node message").unwrap(), None);
        d.finish().unwrap();
        for m in all_manager_msgs() {
            let f = encode(&m);
            d.feed(&f);
            assert_eq!(d.next::<ManagerMsg>("manager message").unwrap(), Some(m));
        }
    }

    #[test]
    fn client_messages_round_trip() {
        let mut job = crate::job::JobSpec {
            id: 3,
            details: crate::job::JobDetails {
                runtime_estimate: 100.0,
                submit_time: 0.0,
                name: None,
            },
            resources: crate::job::ResourceRequirements {
                processors: 2,
                memory_kb: 0,
                disk_mb: 0,
            },
            qos: crate::job::QosConstraints {
                deadline: 400.0,
                budget: f64::INFINITY,
                deadline_type: crate::job::DeadlineType::Soft,
                penalty_rate: 0.5,
            },
            optimization: Default::default(),
            urgency: None,
            extra_segments: Default::default(),
        };
        job.extra_segments.insert(
            "Data".into(),
            [("input".to_string(), "x".to_string())]
                .into_iter()
                .collect(),
        );
        let m = ClientMsg::Submit {
            token: 9,
            job: WireJob::from(&job),
            actual: Some(80.0),
        };
        assert_eq!(m.oversized(), None);
        let f = encode(&m);
        let back: ClientMsg = decode_payload("client message", &f[LEN_PREFIX..]).unwrap();
        assert_eq!(back, m);
        // A name or segments longer than the manager keeps are named.
        let mut long = WireJob::from(&job);
        long.name = Some("n".repeat(MAX_PEER_STRING + 1));
        let big = ClientMsg::Quote {
            token: 1,
            job: long.clone(),
        };
        assert_eq!(
            big.oversized().as_deref(),
            Some("the job's name of 1025 bytes (at most 1024)")
        );
        long.name = Some("n".repeat(MAX_PEER_STRING));
        long.extra_segments = vec![(
            "D".into(),
            vec![("k".into(), "v".repeat(MAX_EXTRA_SEGMENTS))],
        )];
        let big = ClientMsg::Submit {
            token: 1,
            job: long,
            actual: None,
        };
        assert!(big
            .oversized()
            .unwrap()
            .starts_with("extra segments of 16386 bytes"));
        let ClientMsg::Submit { job: w, .. } = back else {
            unreachable!()
        };
        assert_eq!(JobSpec::from(w), job);
        let r = ClientReply::Decided {
            token: 9,
            job: 1 << 40,
            at: 5.0,
            decision: Decision::reject(crate::policy::RejectReason::Budget, "too dear"),
        };
        let f = encode(&r);
        assert_eq!(
            decode_payload::<ClientReply>("client reply", &f[LEN_PREFIX..]).unwrap(),
            r
        );
    }

    #[test]
    fn frames_split_anywhere_reassemble() {
        let bytes: Vec<u8> = all_node_msgs().iter().flat_map(encode).collect();
        for chunk in [1, 2, 3, 7, 64] {
            let mut d = Decoder::new();
            let mut got = Vec::new();
            for c in bytes.chunks(chunk) {
                d.feed(c);
                while let Some(m) = d.next::<NodeMsg>("node message").unwrap() {
                    got.push(m);
                }
            }
            assert_eq!(got, all_node_msgs(), "chunk {chunk}");
        }
    }

    #[test]
    fn frame_layout_is_length_prefixed() {
        // Heartbeat { seq: 7 }: variant index 1 and 7, each one varint byte.
        let f = encode(&NodeMsg::Heartbeat { seq: 7 });
        assert_eq!(f, vec![0, 0, 0, 2, 1, 7]);
    }

    #[test]
    fn existing_messages_keep_their_bytes() {
        // New variants go at the end of each enum, so the messages older
        // peers know keep their variant indices and bytes.
        assert_eq!(
            encode(&ManagerMsg::Ping { nonce: 5 }),
            vec![0, 0, 0, 2, 4, 5]
        );
        assert_eq!(encode(&NodeMsg::Pong { nonce: 9 }), vec![0, 0, 0, 2, 7, 9]);
        let cancel = ManagerMsg::Cancel {
            part: PartId { job: 1, index: 2 },
        };
        assert_eq!(encode(&cancel), vec![0, 0, 0, 3, 3, 1, 2]);
    }

    #[test]
    fn oversize_frame_is_refused_before_buffering() {
        let mut d = Decoder::new();
        d.feed(&((MAX_FRAME as u32) + 1).to_be_bytes());
        assert!(matches!(
            d.next_payload(),
            Err(ProtocolError::FrameTooLarge { .. })
        ));
    }

    #[test]
    fn strangers_bytes_are_errors_not_panics() {
        // An HTTP request arriving where a hello should be.
        let mut d = Decoder::new();
        d.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        // "GET " as a length is 0x47455420 > MAX_FRAME.
        assert!(d.next_payload().is_err());
        // A well-framed payload that is not a hello.
        assert_eq!(
            decode_hello(b"hello there"),
            Err(ProtocolError::NotLibratory)
        );
        // A truncated hello.
        let f = encode(&Hello::new(Role::Node, "x"));
        assert!(matches!(
            decode_hello(&f[LEN_PREFIX..f.len() - 1]),
            Err(ProtocolError::Malformed { .. })
        ));
        // An unknown variant index.
        assert!(matches!(
            decode_payload::<NodeMsg>("node message", &[200, 1]),
            Err(ProtocolError::Malformed { .. })
        ));
        // Trailing garbage after a valid message.
        assert!(matches!(
            decode_payload::<NodeMsg>("node message", &[1, 7, 0]),
            Err(ProtocolError::Trailing { extra: 1, .. })
        ));
        // A cut-off frame at end of stream.
        let mut d = Decoder::new();
        d.feed(&encode(&NodeMsg::Heartbeat { seq: 1 })[..4]);
        assert!(d.next_payload().unwrap().is_none());
        assert!(matches!(d.finish(), Err(ProtocolError::Truncated { .. })));
    }

    #[test]
    fn version_mismatch_is_named() {
        let mut h = Hello::new(Role::Node, "libratory-node 9.9");
        h.version = PROTOCOL_VERSION + 1;
        let f = encode(&h);
        let e = decode_hello(&f[LEN_PREFIX..]).unwrap_err();
        assert!(matches!(e, ProtocolError::Version { .. }));
        assert!(e.to_string().contains("libratory-node 9.9"), "{e}");
    }

    #[test]
    fn huge_vec_length_inside_a_frame_is_bounded() {
        // A Register claiming 2^60 nodes in a tiny frame must fail cleanly
        // (the decoder's limit), not try to allocate.
        let mut bytes = vec![0u8]; // variant Register
        bytes.extend_from_slice(&[1, b'h']); // host "h"
        bytes.push(255); // varint marker for u64
        bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
        assert!(decode_payload::<NodeMsg>("node message", &bytes).is_err());
    }

    proptest::proptest! {
        /// Arbitrary bytes, fed in arbitrary chunks, never panic the
        /// decoder: they yield messages or an error.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512), chunk in 1usize..64) {
            let mut d = Decoder::new();
            for c in bytes.chunks(chunk) {
                d.feed(c);
                while let Ok(Some(_)) = d.next::<NodeMsg>("node message") {}
            }
            let _ = decode_hello(&bytes);
            let _ = decode_payload::<ManagerMsg>("manager message", &bytes);
        }

        /// Progress reports with arbitrary values round-trip exactly.
        #[test]
        fn progress_round_trips(job in 0u64..u64::MAX, index in 0u32..1000, at in -1e12f64..1e12, work in 0f64..1e9, share in 0f64..1.0) {
            let m = NodeMsg::Progress { at, parts: vec![PartProgress { part: PartId { job, index }, node: index, work_done: work, share }] };
            let f = encode(&m);
            let back: NodeMsg = decode_payload("node message", &f[LEN_PREFIX..]).unwrap();
            proptest::prop_assert_eq!(back, m);
        }
    }
}
