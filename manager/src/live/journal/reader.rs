//! The journal read back: lines to entries, a last line torn by a crash
//! left out and reported, any other bad line an error naming the file and
//! the line.

use std::fs;
use std::path::Path;

use super::format::{Entry, Header};
use super::{JournalError, FORMAT};

/// A journal as read back.
#[derive(Debug, Clone)]
pub struct Contents {
    /// The header.
    pub header: Header,
    /// Every entry after it, in order.
    pub entries: Vec<Entry>,
    /// The 1-based number of a last line cut short by a crash (no newline,
    /// not JSON), which was left out.
    pub torn_line: Option<usize>,
}

/// Reads the journal at `path`. A torn last line (a crash in the middle of
/// a write: no final newline) is left out and reported in
/// [`Contents::torn_line`]; any other line that is not an entry is an
/// error naming the file and line.
pub fn read(path: &Path) -> Result<Contents, JournalError> {
    let bytes = fs::read(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &bytes)
}

/// [`read`] on bytes already read (`path` names them in errors).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Contents, JournalError> {
    let corrupt = |line: usize, message: String| JournalError::Corrupt {
        path: path.to_path_buf(),
        line,
        message,
    };
    let ends_whole = bytes.last() == Some(&b'\n');
    let lines: Vec<&[u8]> = bytes
        .strip_suffix(b"\n")
        .unwrap_or(bytes)
        .split(|&b| b == b'\n')
        .collect();
    let n = lines.len();
    let mut header = None;
    let mut entries = Vec::new();
    let mut torn_line = None;
    for (i, line) in lines.into_iter().enumerate() {
        let no = i + 1;
        if bytes.is_empty() {
            break;
        }
        let parsed: Result<Entry, String> = std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|s| serde_json::from_str(s).map_err(|e| e.to_string()));
        let entry = match parsed {
            Ok(e) => e,
            Err(_) if no == n && !ends_whole && no > 1 => {
                torn_line = Some(no);
                break;
            }
            Err(e) => return Err(corrupt(no, e)),
        };
        match (no, entry) {
            (1, Entry::Header(h)) => {
                if h.format != FORMAT {
                    return Err(corrupt(
                        1,
                        format!("format {:?}, this binary reads {FORMAT:?}", h.format),
                    ));
                }
                header = Some(*h);
            }
            (1, _) => return Err(corrupt(1, "the first line is not the header".into())),
            (_, Entry::Header(_)) => return Err(corrupt(no, "a second header".into())),
            (
                _,
                Entry::Finished {
                    id, finish, record, ..
                },
            ) if !matches!(
                (id.is_some(), finish.is_some(), record.is_some()),
                (true, true, false) | (false, false, true)
            ) =>
            {
                return Err(corrupt(
                    no,
                    "a `finished` entry needs either `record`, or `id` and `finish`".into(),
                ))
            }
            (_, e) => entries.push(e),
        }
    }
    let header = header.ok_or_else(|| corrupt(1, "empty journal: no header".into()))?;
    Ok(Contents {
        header,
        entries,
        torn_line,
    })
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::journal::format::entry_json;
    use crate::live::journal::rebuild;
    use crate::live::journal::testkit::{record, sample};
    use common::metrics::JobRecord;

    /// Every time a journal holds reads back to the very same `f64`, so a
    /// rebuilt record is the run's own bit for bit (serde_json's default
    /// float parser can land one ulp off: 230.25714961999998 read back as
    /// 230.25714962 in a demo's rebuild; the `float_roundtrip` feature
    /// parses exactly).
    #[test]
    fn times_read_back_bit_for_bit() {
        let (_d, path) = sample();
        let mut text = std::fs::read_to_string(&path).unwrap();
        let mut want = Vec::new();
        for i in 1..2_000u64 {
            // Times of every magnitude with 15-17 significant digits.
            let finish = 230.257_149_62 * i as f64 / 7.0 + 1e-9 * (i * i) as f64;
            want.push(finish);
            let mut r = record(1_000 + i);
            r.accepted = true;
            r.decided_at = finish / 3.0;
            r.start = Some(finish / 3.0);
            let mut line = Vec::new();
            entry_json(&mut line, &Entry::Decided { t: 1.0, record: r }).unwrap();
            text.push_str(std::str::from_utf8(&line).unwrap());
            text.push('\n');
            line.clear();
            entry_json(
                &mut line,
                &Entry::Finished {
                    t: 1.0,
                    id: Some(1_000 + i),
                    finish: Some(finish),
                    record: None,
                },
            )
            .unwrap();
            text.push_str(std::str::from_utf8(&line).unwrap());
            text.push('\n');
        }
        // The sample's replay offset (10) is taken off, as the run does.
        let r = rebuild(&parse(&path, text.as_bytes()).unwrap());
        let got: Vec<&JobRecord> = r.records.iter().filter(|r| r.id > 1_000).collect();
        assert_eq!(got.len(), want.len());
        for (r, w) in got.iter().zip(&want) {
            assert_eq!(
                r.finish.map(f64::to_bits),
                Some((w - 10.0).to_bits()),
                "job {}",
                r.id
            );
            assert_eq!(
                r.decided_at.to_bits(),
                (w / 3.0 - 10.0).to_bits(),
                "job {}",
                r.id
            );
        }
    }

    #[test]
    fn a_torn_last_line_is_left_out_and_reported() {
        let (_d, path) = sample();
        let mut bytes = fs::read(&path).unwrap();
        let lines = bytes.iter().filter(|&&b| b == b'\n').count();
        bytes.extend_from_slice(b"{\"e\":\"finished\",\"t\":0.9,\"rec");
        let c = parse(&path, &bytes).unwrap();
        assert_eq!(c.torn_line, Some(lines + 1));
        assert_eq!(rebuild(&c).records.len(), 4);
    }

    #[test]
    fn a_corrupt_line_is_an_error_naming_file_and_line() {
        let (_d, path) = sample();
        let text = fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[3] = "{\"e\":\"decided\",\"t\":oops}";
        let bad = lines.join("\n") + "\n";
        let e = parse(&path, bad.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("journal.jsonl, line 4:"), "{e}");
        // A cut line followed by more lines is corruption, not a torn end.
        let cut = format!("{}\n{{\"e\":\"dec\n{}\n", lines[0], lines[1]);
        let e = parse(&path, cut.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("line 2:"), "{e}");
        // No header.
        let e = parse(&path, format!("{}\n", lines[1]).as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1: the first line is not the header"),
            "{e}"
        );
    }
}
