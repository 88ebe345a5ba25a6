//! `libratory certs`: a cluster CA and the certificates of the manager,
//! the client, the viewer, the operator (the fault injector's) and each
//! node; more node certificates later (`--add`, which also signs the
//! operator's if missing); revocations (`--revoke`).

use std::path::Path;

use anyhow::{bail, Result};

/// `libratory certs`: a cluster CA, the manager's certificate, the client's
/// and the viewer's, and one per node name; or more node certificates
/// (`add`); or revocations.
pub fn certs(out: &Path, nodes: &[String], manager_names: &[String], add: bool) -> Result<()> {
    certs_or_revoke(out, nodes, manager_names, add, &[])
}

/// `libratory certs` with `--revoke`: revocation goes alone.
pub fn certs_or_revoke(
    out: &Path,
    nodes: &[String],
    manager_names: &[String],
    add: bool,
    revoke: &[String],
) -> Result<()> {
    if !revoke.is_empty() {
        if add || !nodes.is_empty() {
            bail!("--revoke goes alone: revoke first, then --add new node certificates");
        }
        for name in revoke {
            let id = net::roles::revoke(out, name)?;
            println!(
                "revoked {id}, serial {}, in {}",
                id.serial_hex(),
                net::roles::crl_path(out).display()
            );
        }
        println!("a running manager refuses it once it re-reads the list: kill -HUP <manager pid>");
        return Ok(());
    }
    if add {
        net::add_node_certs(out, nodes)?;
        println!(
            "added {} node certificate(s) to {}",
            nodes.len(),
            out.display()
        );
    } else {
        net::make_cluster_certs(out, manager_names, nodes)?;
        println!(
            "made a cluster CA, the manager, client, viewer and operator certificates and {} node certificate(s) in {}\n\
             copy ca.pem and node-NAME.pem/.key (only its own) to each node host; keep ca.key on this machine",
            nodes.len(),
            out.display()
        );
    }
    Ok(())
}
