//! The signed-in user's own account: change their password (the only page they may use
//! while a reset asks them to), and their personal API tokens for programs: make one (shown
//! once), see when each was last used, revoke it.

use bulkq_types::accounts::{Account, Role, TaskEmails, TokenInfo};
use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::accounts::{
    ChangeOwnPassword, CreateOwnToken, RevokeOwnToken, SetOwnEmail, SetOwnFailureAlerts,
    SetOwnTaskEmails, list_own_tokens, own_account,
};
use crate::api::auth::get_current_user;
use crate::components::feedback::{ErrorMessage, HeaderRow};
use crate::components::top_bar::TopBar;
use crate::error::AppError;
use crate::format;

/// How long a new token may live, as the form offers it: (days, label); 0 is never.
const TOKEN_LIFETIMES: [(u32, &str); 4] = [
    (30, "30 days"),
    (90, "90 days"),
    (365, "a year"),
    (0, "never expires"),
];

/// Renders the Account page.
#[component]
pub fn AccountPage() -> impl IntoView {
    let change = ServerAction::<ChangeOwnPassword>::new();
    let user = Resource::new(move || change.version().get(), |_| get_current_user());
    // Every resource of the page is made here, outside the suspense that shows the forms: a
    // resource made inside a suspended view may be numbered in another order by the server
    // than by the hydrating browser, which then reads another resource's data, renders
    // something else and panics on the mismatch.
    let email = EmailState::new();
    let tokens = TokenState::new();
    view! {
        <Title text="Your account · bulkq" />
        <TopBar />
        <main>
            <h1>"Your account"</h1>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let must_change = user.await.ok().flatten().is_some_and(|u| u.must_change_password);
                    view! {
                        <PasswordForm change must_change />
                        {(!must_change).then(|| view! { <EmailForm state=email /> <Tokens state=tokens /> })}
                    }
                })}
            </Transition>
        </main>
    }
}

#[component]
fn PasswordForm(change: ServerAction<ChangeOwnPassword>, must_change: bool) -> impl IntoView {
    let outcome = move || {
        change.value().get().map(|result| match result {
            Ok(()) => view! {
                <p class="notice" role="status" data-testid="password-changed">
                    "Your password is changed. " <a href="/">"Go to the caseload"</a>
                </p>
            }
            .into_any(),
            Err(error) => view! { <ErrorMessage error /> }.into_any(),
        })
    };
    view! {
        <section aria-label="Password">
            <h2>"Password"</h2>
            {must_change.then(|| view! {
                <p class="notice" role="status" data-testid="must-change">
                    "Your password was reset. Choose your own to go on."
                </p>
            })}
            <ActionForm action=change>
                <label for="current">"Current password"</label>
                <input id="current" name="current" type="password" autocomplete="current-password" required />
                <label for="new">"New password"</label>
                <input id="new" name="new" type="password" autocomplete="new-password" required minlength="15" maxlength="256" />
                <p class="hint">"At least 15 characters; a few unrelated words make a good one."</p>
                <button type="submit" disabled=move || change.pending().get()>"Change password"</button>
            </ActionForm>
            {outcome}
        </section>
    }
}

/// The Email section's actions and the account it shows.
#[derive(Clone, Copy)]
struct EmailState {
    save: ServerAction<SetOwnEmail>,
    choose: ServerAction<SetOwnTaskEmails>,
    alerts: ServerAction<SetOwnFailureAlerts>,
    account: Resource<Result<Account, AppError>>,
}

impl EmailState {
    fn new() -> Self {
        let save = ServerAction::<SetOwnEmail>::new();
        let choose = ServerAction::<SetOwnTaskEmails>::new();
        let alerts = ServerAction::<SetOwnFailureAlerts>::new();
        // Read once: after a save each form already shows what was saved, and reading the
        // account again re-rendered every form, undoing a choice made in another form
        // while the read was under way.
        let account = Resource::new(|| (), |_| own_account());
        EmailState {
            save,
            choose,
            alerts,
            account,
        }
    }
}

/// Where the user is told things (their people's news, their tasks' ends), and which of
/// their tasks' ends they hear of.
#[component]
fn EmailForm(state: EmailState) -> impl IntoView {
    let EmailState {
        save,
        choose,
        alerts,
        account,
    } = state;
    let outcome = move || {
        [
            save.value().get().map(|r| r.map(drop)),
            choose.value().get().map(|r| r.map(drop)),
            alerts.value().get().map(|r| r.map(drop)),
        ]
        .into_iter()
        .flatten()
        .next()
        .map(|result| match result {
            Ok(()) => view! { <p class="notice" role="status">"Saved."</p> }.into_any(),
            Err(error) => view! { <ErrorMessage error /> }.into_any(),
        })
    };
    view! {
        <section aria-label="Email">
            <h2>"Email"</h2>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let account = account.await.ok();
                    let email = account.as_ref().and_then(|a| a.email.clone()).unwrap_or_default();
                    let chosen = account.as_ref().map(|a| a.task_emails).unwrap_or_default();
                    let is_admin = account.as_ref().is_some_and(|a| a.role == Role::Admin);
                    let alerted = account.is_some_and(|a| a.failure_alerts);
                    view! {
                        <ActionForm action=save>
                            <label for="email">"Tell me things at"</label>
                            <input id="email" name="email" type="email" maxlength="254" value=email aria-describedby="email-hint" />
                            <p class="hint" id="email-hint">
                                "Early alerts for people you coach, people moved to you, and your tasks' ends. Empty: no email."
                            </p>
                            <button type="submit" disabled=move || save.pending().get()>"Save"</button>
                        </ActionForm>
                        <ActionForm action=choose attr:class="inline-form">
                            <label>
                                "Email me about my tasks"
                                <select name="choice">
                                    {TaskEmails::ALL
                                        .into_iter()
                                        .map(|choice| view! {
                                            <option value=choice.as_str() selected=choice == chosen>{choice.label()}</option>
                                        })
                                        .collect_view()}
                                </select>
                            </label>
                            <button type="submit" disabled=move || choose.pending().get()>"Save choice"</button>
                        </ActionForm>
                        {is_admin.then(|| view! {
                            <ActionForm action=alerts attr:class="inline-form">
                                <label>
                                    "Email me when anyone's task fails or tasks wait too long"
                                    <select name="on">
                                        <option value="false" selected=!alerted>"no"</option>
                                        <option value="true" selected=alerted>"yes"</option>
                                    </select>
                                </label>
                                <button type="submit" disabled=move || alerts.pending().get()>"Save alerts"</button>
                            </ActionForm>
                        })}
                    }
                })}
            </Transition>
            {outcome}
        </section>
    }
}

/// The token section's actions and the tokens it lists.
#[derive(Clone, Copy)]
struct TokenState {
    create: ServerAction<CreateOwnToken>,
    revoke: ServerAction<RevokeOwnToken>,
    tokens: Resource<Result<Vec<TokenInfo>, AppError>>,
}

impl TokenState {
    fn new() -> Self {
        let create = ServerAction::<CreateOwnToken>::new();
        let revoke = ServerAction::<RevokeOwnToken>::new();
        let tokens = Resource::new(
            move || (create.version().get(), revoke.version().get()),
            |_| list_own_tokens(),
        );
        TokenState {
            create,
            revoke,
            tokens,
        }
    }
}

#[component]
fn Tokens(state: TokenState) -> impl IntoView {
    let TokenState {
        create,
        revoke,
        tokens,
    } = state;
    let created = move || {
        create.value().get().map(|result| match result {
            Ok(new) => view! {
                <p class="notice" role="status">
                    "Your new token " <strong>{new.token.name}</strong> ": "
                    <code data-testid="new-token">{new.secret}</code>
                    " (copy it now: it is shown only this once)"
                </p>
            }
            .into_any(),
            Err(error) => view! { <ErrorMessage error /> }.into_any(),
        })
    };
    view! {
        <section aria-label="API tokens">
            <h2>"API tokens"</h2>
            <p class="hint">
                "Programs send a token as " <code>"Authorization: Bearer …"</code>
                " to the JSON API (" <a href="/api/1/openapi.json">"its contract"</a> ")."
            </p>
            <ActionForm action=create attr:class="inline-form">
                <label>"Name" <input name="name" type="text" required maxlength="64" /></label>
                <label>
                    "Access"
                    <select name="can_act">
                        <option value="false">"read only"</option>
                        <option value="true">"read and act"</option>
                    </select>
                </label>
                <label>
                    "Expires"
                    <select name="expires_in_days">
                        {TOKEN_LIFETIMES
                            .iter()
                            .map(|(days, label)| view! { <option value=days.to_string()>{*label}</option> })
                            .collect_view()}
                    </select>
                </label>
                <button type="submit" disabled=move || create.pending().get()>"Make token"</button>
            </ActionForm>
            {created}
            {move || revoke.value().get().and_then(Result::err).map(|error| view! { <ErrorMessage error /> })}
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match tokens.await {
                        Ok(tokens) if tokens.is_empty() => view! { <p class="empty">"No tokens yet."</p> }.into_any(),
                        Ok(tokens) => view! { <TokenTable tokens revoke /> }.into_any(),
                        Err(error) => view! { <ErrorMessage error /> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn TokenTable(tokens: Vec<TokenInfo>, revoke: ServerAction<RevokeOwnToken>) -> impl IntoView {
    let when = |at: Option<chrono::DateTime<chrono::Utc>>, none: &'static str| {
        at.map_or_else(|| none.to_owned(), |at| format::minute(&at.to_rfc3339()))
    };
    view! {
        <div class="table-scroll" tabindex="0">
            <table data-testid="tokens">
                <HeaderRow columns=&["Name", "Access", "Made", "Expires", "Last used", "State", ""] />
                <tbody>
                    {tokens
                        .into_iter()
                        .map(|token| {
                            let live = token.live;
                            let state = match (token.revoked_at, live) {
                                (Some(_), _) => "revoked",
                                (None, false) => "expired",
                                (None, true) => "live",
                            };
                            let id = token.id;
                            view! {
                                <tr data-testid=format!("token-{}", token.name)>
                                    <td>{token.name.clone()}</td>
                                    <td>{if token.can_act { "read and act" } else { "read only" }}</td>
                                    <td>{format::minute(&token.created_at.to_rfc3339())}</td>
                                    <td>{when(token.expires_at, "never")}</td>
                                    <td data-testid="last-used">{when(token.last_used_at, "never")}</td>
                                    <td>{state}</td>
                                    <td>
                                        {live.then(|| view! {
                                            <button
                                                type="button"
                                                class="secondary"
                                                on:click=move |_| { revoke.dispatch(RevokeOwnToken { id }); }
                                            >
                                                "Revoke"
                                            </button>
                                        })}
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}
