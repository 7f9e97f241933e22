//! `dsh-session-ref users`: who reads a team database through `serve
//! --users` (docs/teams.md): users, their tokens, the projects granted to
//! each, and the record of who read what, through the teams crate.

use dsh_session_reference::block_on;
use dsh_session_reference_teams::users;
use serde_json::{json, Value};

use crate::args::{Global, UsersArgs, UsersCommand};
use crate::failure::{read_failed, CliResult};
use crate::print::display;

/// Runs `users`.
pub(crate) fn run(g: &Global, args: &UsersArgs) -> CliResult {
    let db = crate::push::database(args.database.as_deref(), "--database")?;
    let out = g.out();
    // What each command prints: JSON with --json, else lines for a person
    // (what a script needs, the token, alone on standard output).
    let (value, text): (Value, String) = match &args.command {
        UsersCommand::Add { name } => {
            block_on(users::add_user(&db, name)).map_err(read_failed)?;
            (json!({"user": name}), note(g, format!("added user {}", display(name))))
        }
        UsersCommand::Token { name } => {
            let issued = block_on(users::issue_token(&db, name)).map_err(read_failed)?;
            if !g.quiet && !out.is_json() {
                eprintln!(
                    "note: token {} of {}: shown this once (the database keeps only its hash)",
                    issued.id,
                    display(name)
                );
            }
            (json!({"user": name, "tokenId": issued.id, "token": issued.token}), format!("{}\n", issued.token))
        }
        UsersCommand::Revoke { id: Some(id), .. } => {
            let now = block_on(users::revoke_token(&db, *id)).map_err(read_failed)?;
            let said = if now { format!("revoked token {id}") } else { format!("token {id} was revoked already") };
            (json!({"tokenId": id, "revoked": now}), note(g, said))
        }
        UsersCommand::Revoke { id: None, user } => {
            let name = user.as_deref().unwrap_or_default();
            let n = block_on(users::revoke_user(&db, name)).map_err(read_failed)?;
            (json!({"user": name, "revoked": n}), note(g, format!("revoked {n} token(s) of {}", display(name))))
        }
        UsersCommand::Grant { name, project } => {
            let new = block_on(users::grant(&db, name, project)).map_err(read_failed)?;
            let said = match new {
                true => format!("{} may read the sessions of {}", display(name), display(project)),
                false => format!("{} may read the sessions of {} already", display(name), display(project)),
            };
            (json!({"user": name, "project": project, "granted": new}), note(g, said))
        }
        UsersCommand::Ungrant { name, project } => {
            let gone = block_on(users::ungrant(&db, name, project)).map_err(read_failed)?;
            let said = match gone {
                true => format!("{} no longer reads the sessions of {}", display(name), display(project)),
                false => format!("{} was not granted {}", display(name), display(project)),
            };
            (json!({"user": name, "project": project, "ungranted": gone}), note(g, said))
        }
        UsersCommand::List => {
            let list = block_on(users::list(&db)).map_err(read_failed)?;
            let value = list
                .iter()
                .map(|u| {
                    let tokens: Vec<Value> = u
                        .tokens
                        .iter()
                        .map(|t| json!({"id": t.id, "issuedAt": t.issued_at, "revokedAt": t.revoked_at}))
                        .collect();
                    json!({"user": u.name, "projects": u.projects, "tokens": tokens})
                })
                .collect();
            let mut text = String::new();
            for u in &list {
                let valid: Vec<String> =
                    u.tokens.iter().filter(|t| t.revoked_at.is_none()).map(|t| t.id.to_string()).collect();
                let revoked = u.tokens.len() - valid.len();
                text.push_str(&format!(
                    "{}\tprojects: {}\ttokens: {}{}\n",
                    display(&u.name),
                    if u.projects.is_empty() { "none".to_owned() } else { display(&u.projects.join(", ")) },
                    if valid.is_empty() { "none".to_owned() } else { valid.join(", ") },
                    if revoked > 0 { format!(" ({revoked} revoked)") } else { String::new() }
                ));
            }
            (Value::Array(value), text)
        }
        UsersCommand::Projects => {
            let list = block_on(users::projects(&db)).map_err(read_failed)?;
            let value = list.iter().map(|(p, n)| json!({"project": p, "sessions": n})).collect();
            let text = list.iter().map(|(p, n)| format!("{n}\t{}\n", display(p))).collect();
            (Value::Array(value), text)
        }
        UsersCommand::Audit { user, limit } => {
            let limit = i64::try_from(limit.unwrap_or(50)).unwrap_or(i64::MAX);
            let rows = block_on(users::audit(&db, user.as_deref(), limit)).map_err(read_failed)?;
            let value = rows
                .iter()
                .map(|r| {
                    json!({"at": r.at, "user": r.user, "tokenId": r.token_id, "action": r.action,
                           "sessionId": r.session_id})
                })
                .collect();
            let text = rows
                .iter()
                .map(|r| format!("{}\t{}\t{}\t{}\n", r.at, display(&r.user), r.action, display(&r.session_id)))
                .collect();
            (Value::Array(value), text)
        }
    };
    if out.is_json() {
        println!("{}", out.json(&value));
    } else {
        print!("{text}");
    }
    Ok(())
}

/// A change's confirmation: said on stderr (nothing on standard output),
/// unless `--quiet`.
fn note(g: &Global, said: String) -> String {
    if !g.quiet && !g.out().is_json() {
        eprintln!("{said}");
    }
    String::new()
}
