//! The parsed-trace cache: a rerun on the same trace does not inflate and
//! parse it again.
//!
//! Reading a window of a gzipped SWF trace means inflating and parsing
//! every line of it (a malformed line anywhere is an error, so none can be
//! skipped): for the SDSC SP2 trace 73,496 lines, most of a short
//! simulation's time. After a full read succeeds, the window the workload
//! is built from (the header and the last `jobs` records) is stored in one
//! file named by the trace's SHA-256 (computed anyway for the manifest),
//! the window size and the format version. A later run on a trace with the
//! same content and the same window reads that file instead.
//!
//! A cache file is never trusted blindly: it must start with the magic and
//! this format version, its payload must match the SHA-256 stored before
//! it, and the decoded entry must name the same trace hash and window.
//! Anything else (missing, unreadable, truncated, corrupt, another
//! version) is ignored, the trace is read in full as without a cache, and
//! the file is rewritten. Since only a successful read is stored, a
//! malformed trace still fails every time. Files are written to a
//! temporary name and renamed, so a concurrent run never sees half a file.
//!
//! The trace's hash is not computed before the entry is read: hashing the
//! SDSC trace (1.2 MB) took over a millisecond at the head of every run. A
//! small hint file, named by the trace's identity on disk (canonical path,
//! device, inode, size, modification time in ns), remembers the hash the
//! trace had when it was last read. When the hint matches, the entry it
//! names is read and the workload built while another thread hashes the
//! trace; the entry is used only if that hash equals the hint's (and the
//! entry's own). A trace rewritten in place with the same size and time is
//! still caught: its hash differs, the entry is ignored and the trace is
//! read in full. The manifest records the hash computed in this run.
//!
//! Where: `$LIBRATORY_CACHE_DIR`, else `$XDG_CACHE_HOME/libratory`, else
//! `~/.cache/libratory`; `LIBRATORY_CACHE_DIR=off` disables the cache.
//! Clearing it is deleting the directory (docs/cli.md). The log says how
//! the trace was read: `(0.004 s to read; trace cache: hit, PATH)`.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use common::protocol;
use common::swf::{self, SwfHeader, SwfRecord};
use common::workload::{self, Params, Source, Workload};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::environment::Environment;
use crate::results::rundir::{self, TraceFacts};

/// First bytes of every cache file.
const MAGIC: &[u8; 16] = b"libratory-swfc\n\0";
/// Bumped whenever the entry's layout (or `SwfRecord`'s, or the file
/// codec's) changes: files of another version are ignored and rewritten.
/// 2: fixed-width integers (`protocol::encode_file_value`).
pub const FORMAT_VERSION: u32 = 2;
/// Magic, version (u32 LE), SHA-256 of the payload.
const PREFIX: usize = MAGIC.len() + 4 + 32;

/// Where the cache lives, or that there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDir {
    /// No cache: every run reads the trace.
    Off,
    /// Entries are files in this directory (created when first needed).
    At(PathBuf),
}

impl CacheDir {
    /// From the environment `main` read: `LIBRATORY_CACHE_DIR` (`off`
    /// disables), else `$XDG_CACHE_HOME/libratory`, else
    /// `$HOME/.cache/libratory`, else off.
    pub fn from_env(env: &Environment) -> CacheDir {
        CacheDir::from_vars(|k| env.var(k))
    }

    /// [`from_env`](Self::from_env) with the variables read by `var`.
    fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> CacheDir {
        let var = |k: &str| var(k).filter(|v| !v.is_empty());
        if let Some(v) = var("LIBRATORY_CACHE_DIR") {
            return if v == "off" {
                CacheDir::Off
            } else {
                CacheDir::At(PathBuf::from(v))
            };
        }
        if let Some(x) = var("XDG_CACHE_HOME").map(PathBuf::from) {
            // The XDG spec: a relative path is invalid and is ignored.
            if x.is_absolute() {
                return CacheDir::At(x.join("libratory"));
            }
        }
        match var("HOME") {
            Some(h) => CacheDir::At(PathBuf::from(h).join(".cache").join("libratory")),
            None => CacheDir::Off,
        }
    }
}

/// What is stored: the window and what it is the window of.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    trace_sha256: String,
    last: u64,
    header: SwfHeader,
    records: Vec<SwfRecord>,
}

/// How the trace was read, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheUse {
    /// No trace (a generated workload).
    NoTrace,
    /// The cache is off.
    Off,
    /// Read from this cache file.
    Hit(PathBuf),
    /// Read in full and stored in this file; `why` says why the cache had
    /// nothing usable (no entry yet, or what was wrong with it).
    Stored {
        /// The file written.
        path: PathBuf,
        /// Why the trace had to be read.
        why: String,
    },
    /// Read in full; storing failed (the run goes on without a cache).
    NotStored(String),
}

/// As the log says it: `(0.004 s to read; trace cache: hit, PATH)`.
impl std::fmt::Display for CacheUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheUse::NoTrace => f.write_str("no trace"),
            CacheUse::Off => f.write_str("off"),
            CacheUse::Hit(p) => write!(f, "hit, {}", p.display()),
            CacheUse::Stored { path, why } => write!(f, "{why}, stored as {}", path.display()),
            CacheUse::NotStored(e) => write!(f, "not stored: {e}"),
        }
    }
}

/// The trace's identity on disk: canonical path, device, inode, size and
/// modification time (ns). `None` if it cannot be read (no hint then).
fn disk_identity(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let canonical = fs::canonicalize(path).ok()?;
    let m = fs::metadata(&canonical).ok()?;
    Some(format!(
        "{}\ndev {} ino {} size {} mtime {}.{:09}",
        canonical.display(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec()
    ))
}

/// The hint file of a trace whose identity on disk is `identity`.
fn hint_path(dir: &Path, identity: &str) -> PathBuf {
    let h = Sha256::digest(identity.as_bytes());
    let name: String = h[..16].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("hint-{name}.v{FORMAT_VERSION}.txt"))
}

/// The SHA-256 the hint at `path` remembers for a trace of this identity,
/// if it is there and is of this identity (not another that hashed to the
/// same name).
fn read_hint(path: &Path, identity: &str) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let (id, sha) = text.rsplit_once("\nsha256 ")?;
    let sha = sha.strip_suffix('\n')?;
    (id == identity && sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| sha.to_string())
}

/// Remembers `sha256` for the trace of this identity (through a temporary
/// file and a rename). A hint is only ever a guess that is checked, so
/// failing to write one changes nothing but the next run's speed.
fn write_hint(path: &Path, identity: &str, sha256: &str) {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = fs::write(&tmp, format!("{identity}\nsha256 {sha256}\n"))
        .and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// The cache file of a window of the trace whose SHA-256 is `sha256`.
pub fn entry_path(dir: &Path, sha256: &str, last: usize) -> PathBuf {
    dir.join(format!("swf-{sha256}-last{last}.v{FORMAT_VERSION}.bin"))
}

/// The entry at `path` if it is sound and is the window asked for; else
/// why not.
fn load(path: &Path, sha256: &str, last: usize) -> std::result::Result<Entry, String> {
    let bytes = read_entry(path)?;
    if !checksum_ok(&bytes) {
        return Err(CORRUPT.into());
    }
    decode_entry(&bytes, sha256, last)
}

const CORRUPT: &str = "entry corrupt (checksum)";

/// The bytes of the cache file at `path`, if it is one of this version
/// (its checksum not yet checked: [`checksum_ok`]).
fn read_entry(path: &Path) -> std::result::Result<Vec<u8>, String> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("no entry yet".into()),
        Err(e) => return Err(format!("entry unreadable: {e}")),
    };
    if bytes.len() < PREFIX || &bytes[..MAGIC.len()] != MAGIC {
        return Err("entry is not a cache file".into());
    }
    let version = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(format!("entry of format version {version}"));
    }
    Ok(bytes)
}

/// Whether a cache file's payload matches the SHA-256 in its prefix.
fn checksum_ok(bytes: &[u8]) -> bool {
    Sha256::digest(&bytes[PREFIX..]).as_slice() == &bytes[20..PREFIX]
}

/// The entry in a cache file's bytes, if it is the window asked for.
fn decode_entry(bytes: &[u8], sha256: &str, last: usize) -> std::result::Result<Entry, String> {
    let entry: Entry = protocol::decode_file_value("trace cache entry", &bytes[PREFIX..])
        .map_err(|e| format!("entry undecodable: {e}"))?;
    if entry.trace_sha256 != sha256 || entry.last != last as u64 {
        return Err("entry is of another trace or window".into());
    }
    Ok(entry)
}

/// Writes `entry` to `path` (through a temporary file and a rename).
fn store(path: &Path, entry: &Entry) -> Result<()> {
    let dir = path.parent().expect("entry paths have a directory");
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let payload = protocol::encode_file_value("trace cache entry", entry)?;
    let mut bytes = Vec::with_capacity(PREFIX + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&Sha256::digest(&payload));
    bytes.extend_from_slice(&payload);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(&bytes))
        .and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written.with_context(|| format!("writing {}", path.display()))
}

/// Builds the workload `params` describe, as `workload::build` does, with
/// the trace's window read through the cache in `dir`. Also returns the
/// trace's facts for the manifest (its hash is the cache key, so it is
/// computed first, once) and how the cache was used.
pub fn build_workload(
    params: &Params,
    trace: Option<&Path>,
    dir: &CacheDir,
) -> Result<(Workload, Option<TraceFacts>, CacheUse)> {
    let path = match (params.source, trace) {
        (Source::Trace, Some(p)) => p,
        _ => return Ok((workload::build(params, trace)?, None, CacheUse::NoTrace)),
    };
    params.validate()?;
    let dir = match dir {
        CacheDir::Off => {
            let facts = rundir::trace_facts(path)?;
            let (_header, records) = swf::read_last(path, params.jobs)?;
            let wl = workload::from_records(params, path, &records)?;
            return Ok((wl, Some(facts), CacheUse::Off));
        }
        CacheDir::At(d) => d,
    };
    let identity = disk_identity(path);
    let hint = identity.as_ref().map(|id| hint_path(dir, id));
    let guess = match (&identity, &hint) {
        (Some(id), Some(h)) => read_hint(h, id),
        _ => None,
    };
    let facts = match guess {
        Some(sha) => {
            // The trace is hashed beside the reading of the entry its hint
            // names, and the entry counts only if the hashes agree. The
            // entry's own checksum is checked on that side thread too,
            // first, while this one decodes; the records are used only
            // once it has passed.
            let file = entry_path(dir, &sha, params.jobs);
            let bytes = read_entry(&file);
            let (facts, built) = std::thread::scope(|s| {
                let (sound_tx, sound_rx) = std::sync::mpsc::sync_channel(1);
                let bytes = &bytes;
                let side = s.spawn(move || {
                    let sound = bytes.as_ref().is_ok_and(|b| checksum_ok(b));
                    let _ = sound_tx.send(sound);
                    rundir::trace_facts(path)
                });
                let built = bytes
                    .as_ref()
                    .ok()
                    .and_then(|b| decode_entry(b, &sha, params.jobs).ok())
                    .filter(|_| sound_rx.recv() == Ok(true))
                    .map(|entry| workload::from_records(params, path, &entry.records));
                (side.join().expect("hashing thread panicked"), built)
            });
            let facts = facts?;
            if let (true, Some(wl)) = (facts.sha256 == sha, built) {
                return Ok((wl?, Some(facts), CacheUse::Hit(file)));
            }
            facts
        }
        None => rundir::trace_facts(path)?,
    };
    let (wl, used) = build_by_hash(params, path, dir, &facts)?;
    if let (Some(id), Some(h)) = (&identity, &hint) {
        write_hint(h, id, &facts.sha256);
    }
    Ok((wl, Some(facts), used))
}

/// The workload through the entry named by the trace's hash (`facts`),
/// read and stored if it has none.
fn build_by_hash(
    params: &Params,
    path: &Path,
    dir: &Path,
    facts: &TraceFacts,
) -> Result<(Workload, CacheUse)> {
    let file = entry_path(dir, &facts.sha256, params.jobs);
    let (records, used) = match load(&file, &facts.sha256, params.jobs) {
        Ok(entry) => (entry.records, CacheUse::Hit(file)),
        Err(why) => {
            let (header, records) = swf::read_last(path, params.jobs)?;
            let entry = Entry {
                trace_sha256: facts.sha256.clone(),
                last: params.jobs as u64,
                header,
                records,
            };
            let used = match store(&file, &entry) {
                Ok(()) => CacheUse::Stored { path: file, why },
                Err(e) => CacheUse::NotStored(format!("{e:#}")),
            };
            (entry.records, used)
        }
    };
    let wl = workload::from_records(params, path, &records)?;
    Ok((wl, used))
}

#[cfg(test)]
mod tests {
    use common::experiment::Experiment;

    use super::*;
    use crate::lab::simulate::default_trace;

    /// The bench's 4531-job EASY run's parameters.
    fn easy_params() -> Params {
        let mut exp = Experiment::preset("libra-plus-dollar").unwrap();
        exp.set_all([
            "drop_never_ran=true",
            "inaccuracy_form=toward-trace-at-least-actual",
            "inaccuracy=1",
        ])
        .unwrap();
        exp.params
    }

    fn same(a: &Workload, b: &Workload) {
        assert_eq!(a.jobs, b.jobs);
        assert_eq!(a.odd, b.odd);
        assert_eq!(a.trace, b.trace);
        assert_eq!(a.duplicates, b.duplicates);
    }

    fn at(dir: &tempfile::TempDir) -> CacheDir {
        CacheDir::At(dir.path().join("cache"))
    }

    #[test]
    fn cached_and_uncached_workloads_are_identical() {
        let trace = default_trace().expect("the SDSC SP2 trace in ../shared/traces");
        let p = easy_params();
        let plain = workload::build(&p, Some(&trace)).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let (first, facts, used) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        assert!(
            matches!(&used, CacheUse::Stored { why, .. } if why == "no entry yet"),
            "{used}"
        );
        let (second, _, used) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        let file = entry_path(&tmp.path().join("cache"), &facts.unwrap().sha256, p.jobs);
        assert_eq!(used, CacheUse::Hit(file));
        assert_eq!(plain.jobs.len(), 4531);
        same(&plain, &first);
        same(&plain, &second);
        let (off, _, used) = build_workload(&p, Some(&trace), &CacheDir::Off).unwrap();
        assert_eq!(used, CacheUse::Off);
        same(&plain, &off);
    }

    /// A small trace of `n` jobs; `bad_line` puts a malformed line first.
    fn small_trace(dir: &Path, n: usize, bad_line: bool) -> PathBuf {
        let mut text = String::from("; MaxNodes: 128\n; MaxProcs: 128\n");
        if bad_line {
            text.push_str("1 0 0 10 1\n");
        }
        for k in 1..=n {
            text.push_str(&format!(
                "{k} {} 0 {} 4 -1 -1 4 {} -1 1 1 1 -1 1 -1 -1 -1\n",
                k * 60,
                100 + k,
                300 + k
            ));
        }
        let path = dir.join("small.swf");
        fs::write(&path, text).unwrap();
        path
    }

    fn small_params(jobs: usize) -> Params {
        let mut p = easy_params();
        p.set("jobs", &jobs.to_string()).unwrap();
        p
    }

    #[test]
    fn a_corrupt_or_foreign_entry_is_ignored_and_rewritten() {
        let tmp = tempfile::tempdir().unwrap();
        let trace = small_trace(tmp.path(), 30, false);
        let p = small_params(20);
        let plain = workload::build(&p, Some(&trace)).unwrap();
        let (_, facts, _) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        let file = entry_path(&tmp.path().join("cache"), &facts.unwrap().sha256, 20);
        let good = fs::read(&file).unwrap();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let mut version = good.clone();
        version[16] += 1;
        let next_version = format!("entry of format version {}", FORMAT_VERSION + 1);
        let cases: [(&[u8], &str); 5] = [
            (&good[..good.len() - 3], "entry corrupt (checksum)"),
            (&flipped, "entry corrupt (checksum)"),
            (&version, &next_version),
            (&good[..10], "entry is not a cache file"),
            (b"", "entry is not a cache file"),
        ];
        for (bytes, reason) in cases {
            fs::write(&file, bytes).unwrap();
            let (wl, _, used) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
            assert_eq!(
                used,
                CacheUse::Stored {
                    path: file.clone(),
                    why: reason.into()
                }
            );
            same(&plain, &wl);
            assert_eq!(fs::read(&file).unwrap(), good, "rewritten as it was");
        }
        // Sound, but the entry of another window put under this name.
        let (_, _, _) = build_workload(&small_params(10), Some(&trace), &at(&tmp)).unwrap();
        let other = entry_path(
            &tmp.path().join("cache"),
            &rundir::trace_facts(&trace).unwrap().sha256,
            10,
        );
        fs::copy(&other, &file).unwrap();
        let (wl, _, used) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        assert!(
            matches!(&used, CacheUse::Stored { why, .. } if why == "entry is of another trace or window"),
            "{used}"
        );
        same(&plain, &wl);
    }

    #[test]
    fn a_changed_trace_gets_a_new_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let p = small_params(20);
        let trace = small_trace(tmp.path(), 30, false);
        let (a, fa, _) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        let trace = small_trace(tmp.path(), 31, false);
        let (b, fb, used) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        assert_ne!(fa.unwrap().sha256, fb.as_ref().unwrap().sha256);
        assert!(matches!(used, CacheUse::Stored { .. }), "{used}");
        same(&workload::build(&p, Some(&trace)).unwrap(), &b);
        assert_ne!(a.jobs, b.jobs, "the window moved by one job");
        let entries = fs::read_dir(tmp.path().join("cache"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("bin".as_ref()))
            .count();
        assert_eq!(entries, 2);
    }

    #[test]
    fn a_trace_rewritten_in_place_with_the_same_size_and_time_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let p = small_params(20);
        let trace = small_trace(tmp.path(), 30, false);
        let (_, fa, _) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        let (_, _, used) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        assert!(matches!(used, CacheUse::Hit(_)), "{used}");
        // Same bytes count, one run time changed (130 -> 139), the same
        // file (inode) and modification time: the hint matches, the hash
        // does not.
        let id_before = disk_identity(&trace).unwrap();
        let mtime = fs::metadata(&trace).unwrap().modified().unwrap();
        let text = fs::read_to_string(&trace).unwrap();
        let changed = text.replacen(" 130 4 ", " 139 4 ", 1);
        assert_ne!(text, changed);
        assert_eq!(text.len(), changed.len());
        let mut f = fs::OpenOptions::new().write(true).open(&trace).unwrap();
        f.write_all(changed.as_bytes()).unwrap();
        f.set_modified(mtime).unwrap();
        drop(f);
        assert_eq!(disk_identity(&trace).unwrap(), id_before);
        let (wl, fb, used) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        let fb = fb.unwrap();
        assert_ne!(fa.unwrap().sha256, fb.sha256);
        assert_eq!(fb.sha256, rundir::trace_facts(&trace).unwrap().sha256);
        assert!(
            matches!(&used, CacheUse::Stored { why, .. } if why == "no entry yet"),
            "{used}"
        );
        same(&workload::build(&p, Some(&trace)).unwrap(), &wl);
        assert!(wl.jobs.iter().any(|j| j.actual_runtime == 139.0));
        // The hint now names the new content: the next run is a hit.
        let (again, _, used) = build_workload(&p, Some(&trace), &at(&tmp)).unwrap();
        assert_eq!(
            used,
            CacheUse::Hit(entry_path(&tmp.path().join("cache"), &fb.sha256, 20))
        );
        same(&wl, &again);
    }

    #[test]
    fn a_malformed_trace_fails_every_time_and_is_not_cached() {
        let tmp = tempfile::tempdir().unwrap();
        let trace = small_trace(tmp.path(), 30, true);
        let p = small_params(20);
        for _ in 0..2 {
            let err = build_workload(&p, Some(&trace), &at(&tmp)).unwrap_err();
            assert!(
                format!("{err:#}").contains("small.swf:3: expected 18 fields, found 5"),
                "{err:#}"
            );
        }
        assert!(!tmp.path().join("cache").exists());
    }

    #[test]
    fn the_cache_dir_comes_from_the_environment() {
        let from = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            CacheDir::from_vars(move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.into()))
        };
        let home = ("HOME", "/home/u");
        let xdg = ("XDG_CACHE_HOME", "/xdg");
        assert_eq!(
            from(&[("LIBRATORY_CACHE_DIR", "off"), home, xdg]),
            CacheDir::Off
        );
        assert_eq!(
            from(&[("LIBRATORY_CACHE_DIR", "/tmp/x"), home, xdg]),
            CacheDir::At("/tmp/x".into())
        );
        assert_eq!(
            from(&[("LIBRATORY_CACHE_DIR", ""), home, xdg]),
            CacheDir::At("/xdg/libratory".into())
        );
        assert_eq!(
            from(&[home, ("XDG_CACHE_HOME", "relative")]),
            CacheDir::At("/home/u/.cache/libratory".into())
        );
        assert_eq!(from(&[]), CacheDir::Off);
    }
}
