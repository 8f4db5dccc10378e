//! Users, for admins: every staff account with its role and state; create one, disable or
//! enable it, change its role, reset its password. New accounts and resets get a one-time
//! password, shown here once, that its user replaces at their next sign-in. Staff get a 403.

use bulkq_types::accounts::{Account, Role};
use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::accounts::{
    CreateAccount, OneTimePassword, ResetAccountPassword, SetAccountDisabled, SetAccountRole,
    list_accounts,
};
use crate::components::feedback::{AdminPageError, ErrorMessage, HeaderRow};
use crate::components::top_bar::TopBar;
use crate::format;

/// The page's server actions, passed down together.
#[derive(Clone, Copy)]
struct Actions {
    create: ServerAction<CreateAccount>,
    disable: ServerAction<SetAccountDisabled>,
    role: ServerAction<SetAccountRole>,
    reset: ServerAction<ResetAccountPassword>,
}

/// Renders the Users page.
#[component]
pub fn UsersPage() -> impl IntoView {
    let actions = Actions {
        create: ServerAction::new(),
        disable: ServerAction::new(),
        role: ServerAction::new(),
        reset: ServerAction::new(),
    };
    let accounts = Resource::new(
        move || {
            (
                actions.create.version().get(),
                actions.disable.version().get(),
                actions.role.version().get(),
                actions.reset.version().get(),
            )
        },
        |_| list_accounts(),
    );
    view! {
        <Title text="Users · bulkq" />
        <TopBar />
        <main>
            <h1>"Users"</h1>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match accounts.await {
                        Ok(accounts) => view! {
                            <CreateForm actions />
                            <OneTimePasswords actions />
                            <Outcome actions />
                            <AccountTable accounts actions />
                        }
                        .into_any(),
                        Err(error) => view! {
                            <AdminPageError error admins_only="Users are managed by administrators only." />
                        }
                        .into_any(),
                    }
                })}
            </Transition>
        </main>
    }
}

#[component]
fn CreateForm(actions: Actions) -> impl IntoView {
    view! {
        <section aria-label="New user">
            <h2>"New user"</h2>
            <ActionForm action=actions.create attr:class="inline-form">
                <label>
                    "Username" <input name="username" type="text" required maxlength="64" autocomplete="off" />
                </label>
                <label>"Name" <input name="display_name" type="text" maxlength="64" /></label>
                <label>
                    "Role"
                    <select name="role">
                        {Role::ALL
                            .iter()
                            .map(|role| view! { <option value=role.as_str()>{role.as_str()}</option> })
                            .collect_view()}
                    </select>
                </label>
                <button type="submit" disabled=move || actions.create.pending().get()>"Create"</button>
            </ActionForm>
        </section>
    }
}

/// The one-time password of the latest creation or reset, until the page is left.
#[component]
fn OneTimePasswords(actions: Actions) -> impl IntoView {
    let latest = RwSignal::new(None::<OneTimePassword>);
    Effect::new(move |_| {
        if let Some(Ok(one_time)) = actions.create.value().get() {
            latest.set(Some(one_time));
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(one_time)) = actions.reset.value().get() {
            latest.set(Some(one_time));
        }
    });
    move || {
        latest.get().map(|one_time| {
            view! {
                <p class="notice" role="status">
                    "One-time password for " <strong>{one_time.username}</strong> ": "
                    <code data-testid="one-time-password">{one_time.password}</code>
                    " (shown only now; they choose their own at their next sign-in)"
                </p>
            }
        })
    }
}

/// Why the latest change was refused, if it was.
#[component]
fn Outcome(actions: Actions) -> impl IntoView {
    let error = move || {
        [
            actions.create.value().get().and_then(Result::err),
            actions.disable.value().get().and_then(Result::err),
            actions.role.value().get().and_then(Result::err),
            actions.reset.value().get().and_then(Result::err),
        ]
        .into_iter()
        .flatten()
        .next()
    };
    move || error().map(|error| view! { <ErrorMessage error /> })
}

#[component]
fn AccountTable(accounts: Vec<Account>, actions: Actions) -> impl IntoView {
    view! {
        <div class="table-scroll" tabindex="0">
            <table class="accounts" data-testid="accounts">
                <HeaderRow columns=&["Username", "Name", "Role", "State", "Since", ""] />
                <tbody>
                    {accounts
                        .into_iter()
                        .map(|account| view! { <AccountRow account actions /> })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn AccountRow(account: Account, actions: Actions) -> impl IntoView {
    let disabled = account.disabled_at.is_some();
    let state = match (disabled, account.must_change_password) {
        (true, _) => "disabled",
        (false, true) => "password to choose",
        (false, false) => "active",
    };
    let other_role = match account.role {
        Role::Admin => Role::Staff,
        Role::Staff => Role::Admin,
    };
    let (for_disable, for_role, for_reset) = (
        account.username.clone(),
        account.username.clone(),
        account.username.clone(),
    );
    view! {
        <tr data-testid=format!("account-{}", account.username)>
            <td>{account.username.clone()}</td>
            <td>{account.display_name}</td>
            <td>{account.role.as_str()}</td>
            <td data-testid="state">{state}</td>
            <td>{format::minute(&account.disabled_at.unwrap_or(account.created_at).to_rfc3339())}</td>
            <td class="row-actions">
                <button
                    type="button"
                    class="secondary"
                    on:click=move |_| {
                        actions.disable.dispatch(SetAccountDisabled { username: for_disable.clone(), disabled: !disabled });
                    }
                >
                    {if disabled { "Enable" } else { "Disable" }}
                </button>
                <button
                    type="button"
                    class="secondary"
                    on:click=move |_| {
                        actions.role.dispatch(SetAccountRole { username: for_role.clone(), role: other_role });
                    }
                >
                    {format!("Make {}", other_role.as_str())}
                </button>
                <button
                    type="button"
                    class="secondary"
                    on:click=move |_| {
                        actions.reset.dispatch(ResetAccountPassword { username: for_reset.clone() });
                    }
                >
                    "Reset password"
                </button>
            </td>
        </tr>
    }
}
