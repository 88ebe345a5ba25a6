//! Latency histograms as results: their percentiles for `summary.json`
//! and the HdrHistogram interval logs (`histograms/*.hlog`).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use serde::Serialize;

/// A histogram as the `.hlog` files and the journal's `histograms` entry
/// spell it: the compressed V2 encoding, base64.
pub fn encode(h: &Histogram<u64>) -> String {
    use base64::Engine;
    let mut bytes = Vec::new();
    // Serializing into memory cannot fail on I/O; a histogram that cannot
    // be encoded is left empty rather than stopping the run.
    let _ = hdrhistogram::serialization::Serializer::serialize(
        &mut V2DeflateSerializer::new(),
        h,
        &mut bytes,
    );
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The histogram [`encode`] spelled (the error says why not).
pub fn decode(text: &str) -> std::result::Result<Histogram<u64>, String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("not base64: {e}"))?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("not an encoded histogram: {e:?}"))
}

/// The most significant figures a histogram from a peer may keep: its
/// counts array, which the header sizes, then stays under ~0.5 MB.
const PEER_MAX_SIGFIG: u32 = 3;

/// A histogram a peer sent (a node's telemetry, the manager's latency):
/// plain V2 only (what both send), its header's payload length exactly the
/// bytes that follow and at most [`PEER_MAX_SIGFIG`] significant figures,
/// checked before the deserializer sizes its buffers from the header (a
/// few bytes claiming 4 GB would otherwise be allocated).
pub fn from_peer(bytes: &[u8]) -> std::result::Result<Histogram<u64>, String> {
    // The V2 cookie with the word-size bits the crate writes (0x10).
    const V2_COOKIE: u32 = 0x1c84_9313;
    const V2_HEADER: usize = 40;
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")))
    };
    let (Some(cookie), Some(len), Some(sigfig)) = (word(0), word(4), word(12)) else {
        return Err(format!("{} bytes: shorter than a V2 header", bytes.len()));
    };
    if cookie != V2_COOKIE {
        return Err(format!("cookie {cookie:#x}: not a plain V2 histogram"));
    }
    if bytes.len() < V2_HEADER || len as usize != bytes.len() - V2_HEADER {
        return Err(format!(
            "its header says {len} bytes of counts, {} follow",
            bytes.len().saturating_sub(V2_HEADER)
        ));
    }
    if sigfig > PEER_MAX_SIGFIG {
        return Err(format!(
            "{sigfig} significant figures (at most {PEER_MAX_SIGFIG})"
        ));
    }
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("{e:?}"))
}

/// Percentiles of one histogram, for `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

/// Percentiles of `h`.
pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
    Percentiles {
        count: h.len(),
        p50: h.value_at_quantile(0.5),
        p90: h.value_at_quantile(0.9),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
        mean: h.mean(),
    }
}

/// Writes histograms as one HdrHistogram interval log (the standard
/// format: other HdrHistogram tools read it), one tagged interval each,
/// all starting at `start` and lasting `seconds`.
pub fn write_hlog(
    path: &Path,
    start: SystemTime,
    hists: &[(String, &Histogram<u64>)],
    seconds: f64,
) -> Result<()> {
    let spans: Vec<(String, &Histogram<u64>, f64, f64)> = hists
        .iter()
        .map(|(n, h)| (n.clone(), *h, 0.0, seconds))
        .collect();
    write_hlog_intervals(path, start, &spans)
}

/// Writes tagged histogram intervals `(tag, histogram, start s, length s)`
/// as one HdrHistogram interval log, interval times in seconds since
/// `start` (the log's StartTime and BaseTime).
///
/// The layout is the one Java's `HistogramLogWriter` writes and every
/// reader expects (Java `HistogramLogReader`, HistogramLogAnalyzer, the
/// Python `hdrhistogram` package): the format version, StartTime and
/// BaseTime comments, the legend line, then one line per interval with the
/// histogram in the compressed V2 encoding (cookie 0x1c849314), base64.
pub fn write_hlog_intervals(
    path: &Path,
    start: SystemTime,
    hists: &[(String, &Histogram<u64>, f64, f64)],
) -> Result<()> {
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut file = std::io::BufWriter::new(file);
    let mut ser = V2DeflateSerializer::new();
    let io_err =
        |e: std::io::Error| anyhow::Error::from(e).context(format!("writing {}", path.display()));
    IntervalLogWriterBuilder::new()
        .add_comment("[Histogram log format version 1.3]")
        .add_comment(
            "[Libratory latency histograms, values in microseconds (ppm for share_error_ppm)]",
        )
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1.0)
        .begin_log_with(&mut file, &mut ser)
        .map_err(io_err)?;
    // The builder writes no legend line; readers skip it but Java's
    // writer always puts it here, so do the same.
    file.write_all(
        b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    )
    .map_err(io_err)?;
    // A builder without headers writes nothing: this one only carries the
    // interval lines on.
    let mut w = IntervalLogWriterBuilder::new()
        .begin_log_with(&mut file, &mut ser)
        .map_err(io_err)?;
    for (name, h, start, len) in hists {
        // Tags may not contain spaces or commas.
        let tag: String = name
            .chars()
            .map(|c| {
                if c.is_whitespace() || c == ',' {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        w.write_histogram(
            *h,
            Duration::from_secs_f64(start.max(0.0)),
            Duration::from_secs_f64(len.max(0.0)),
            Tag::new(&tag),
        )
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    file.flush().map_err(io_err)?;
    Ok(())
}

/// Histograms merged by name (the same name from several node processes
/// and intervals becomes one histogram).
pub fn merge_by_name<'a>(
    hists: impl IntoIterator<Item = (&'a str, &'a Histogram<u64>)>,
) -> Result<BTreeMap<String, Histogram<u64>>> {
    let mut merged: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for (name, h) in hists {
        // Auto-resizing at the node's precision: a histogram decoded off the
        // wire is fixed to its own range, and adding a later interval with
        // larger values to a copy of the first one's range would fail (and
        // ignoring that error would drop those samples from the summary).
        let m = match merged.entry(name.to_string()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(Histogram::new(h.sigfig()).context("a node histogram's precision")?)
            }
        };
        m.add(h)
            .with_context(|| format!("merging the node histograms {name}"))?;
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_histogram_is_checked_before_it_is_read() {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let mut h = Histogram::<u64>::new(2).unwrap();
        h.record(1234).unwrap();
        let mut ok = Vec::new();
        V2Serializer::new().serialize(&h, &mut ok).unwrap();
        assert_eq!(from_peer(&ok).unwrap().len(), 1);
        // A header claiming 4 GB of counts behind it: refused, nothing
        // allocated.
        let mut huge = ok[..40].to_vec();
        huge[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let err = from_peer(&huge).unwrap_err();
        assert!(
            err.contains("4294967295 bytes of counts, 0 follow"),
            "{err}"
        );
        // Five significant figures, the deflated form, a stub.
        let mut five = ok.clone();
        five[12..16].copy_from_slice(&5u32.to_be_bytes());
        assert!(from_peer(&five).unwrap_err().contains("5 significant"));
        let mut deflated = Vec::new();
        hdrhistogram::serialization::V2DeflateSerializer::new()
            .serialize(&h, &mut deflated)
            .unwrap();
        assert!(from_peer(&deflated).unwrap_err().contains("not a plain V2"));
        assert!(from_peer(&ok[..10]).is_err());
    }

    #[test]
    fn percentiles_of_one_to_a_hundred() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=100 {
            h.record(v).unwrap();
        }
        let p = percentiles(&h);
        assert_eq!(
            (p.count, p.p50, p.p90, p.p99, p.max),
            (100, 50, 90, 99, 100)
        );
        assert!((p.mean - 50.5).abs() < 1e-9, "{}", p.mean);
    }

    #[test]
    fn histograms_of_one_name_merge_whatever_their_ranges() {
        // A histogram decoded off the wire has a fixed range: the second
        // interval's values lie beyond the first's.
        let mut small = Histogram::<u64>::new_with_bounds(1, 1_000, 2).unwrap();
        small.record(10).unwrap();
        let mut large = Histogram::<u64>::new_with_bounds(1, 10_000_000, 2).unwrap();
        large.record(5_000_000).unwrap();
        let mut other = Histogram::<u64>::new(2).unwrap();
        other.record(7).unwrap();
        let merged = merge_by_name([
            ("share_error_ppm", &small),
            ("share_error_ppm", &large),
            ("tick_jitter_us", &other),
        ])
        .unwrap();
        assert_eq!(merged.len(), 2);
        let s = &merged["share_error_ppm"];
        assert_eq!(s.len(), 2);
        assert!(
            s.max() >= 5_000_000 && s.min() <= 10,
            "{} {}",
            s.min(),
            s.max()
        );
        assert_eq!(merged["tick_jitter_us"].len(), 1);
    }
}
