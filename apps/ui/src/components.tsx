import type { ComponentChildren, TargetedSubmitEvent } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';

/** The UI's address inside /ui/, e.g. "secrets/kv/app" (no leading slash). */
export function useRoute(): string {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const onChange = () => setRoute(currentRoute());
    addEventListener('popstate', onChange);
    addEventListener(NAVIGATED, onChange);
    return () => {
      removeEventListener('popstate', onChange);
      removeEventListener(NAVIGATED, onChange);
    };
  }, []);
  return route;
}

const NAVIGATED = 'svc-ui-navigated';

function currentRoute(): string {
  return decodeURIComponent(location.pathname.replace(/^\/ui\/?/, ''));
}

export function navigate(route: string): void {
  history.pushState(null, '', `/ui/${route.split('/').map(encodeURIComponent).join('/')}`);
  dispatchEvent(new Event(NAVIGATED));
}

export function Link(props: { to: string; children: ComponentChildren; current?: boolean }) {
  const onClick = (event: MouseEvent) => {
    event.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={`/ui/${props.to}`} onClick={onClick} aria-current={props.current ? 'page' : undefined}>
      {props.children}
    </a>
  );
}

/** An action's state: run it, and see it busy, failed (with the server's message) or done. */
export interface Action<A extends unknown[], T> {
  run: (...args: A) => Promise<void>;
  busy: boolean;
  error?: string;
  result?: T;
}

export function useAction<A extends unknown[], T>(action: (...args: A) => Promise<T>): Action<A, T> {
  const [state, setState] = useState<{ busy: boolean; error?: string; result?: T }>({ busy: false });
  const run = useCallback(
    async (...args: A) => {
      setState({ busy: true });
      try {
        setState({ busy: false, result: await action(...args) });
      } catch (err) {
        setState({ busy: false, error: describeError(err) });
      }
    },
    [action],
  );
  return { ...state, run };
}

/** Loads once (and again when `deps` change or `reload` is called). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { value?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ value?: T; error?: string }>({});
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    let current = true;
    load().then(
      (value) => current && setState({ value }),
      (err: unknown) => current && setState({ error: describeError(err) }),
    );
    return () => {
      current = false;
    };
  }, [...deps, generation]);
  return { ...state, reload: () => setGeneration((n) => n + 1) };
}

export function describeError(err: unknown): string {
  if (err instanceof ApiError) return `${err.status}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

export function ErrorMessage(props: { error?: string }) {
  return props.error ? (
    <p class="error" role="alert">
      {props.error}
    </p>
  ) : null;
}

/** A submitted form: its fields' values by name, and no page reload. */
export function Form(props: { label: string; onSubmit: (values: Record<string, string>) => void; children: ComponentChildren; submit: string; busy?: boolean; error?: string }) {
  const onSubmit = (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const values: Record<string, string> = {};
    for (const [name, value] of new FormData(event.currentTarget)) values[name] = String(value);
    props.onSubmit(values);
  };
  return (
    <form aria-label={props.label} onSubmit={onSubmit}>
      {props.children}
      <button type="submit" disabled={props.busy}>
        {props.submit}
      </button>
      <ErrorMessage error={props.error} />
    </form>
  );
}

/**
 * Form fields are uncontrolled: `value` is what they start with (a re-render, say when a list
 * loads, never overwrites what the user typed); the form reads them when submitted.
 */
interface FieldProps {
  label: string;
  name: string;
  value?: string;
  type?: 'text' | 'number' | 'password';
  required?: boolean;
  placeholder?: string;
}

export function Field(props: FieldProps) {
  return (
    <label>
      <span>{props.label}</span>
      {props.type === 'password' && <input name={props.name} type="password" defaultValue={props.value} required={props.required} autoComplete="off" />}
      {props.type === 'number' && <input name={props.name} type="number" defaultValue={props.value} required={props.required} />}
      {(props.type ?? 'text') === 'text' && <input name={props.name} type="text" defaultValue={props.value} required={props.required} placeholder={props.placeholder} autoComplete="off" />}
    </label>
  );
}

export function TextArea(props: FieldProps & { rows?: number }) {
  return (
    <label>
      <span>{props.label}</span>
      <textarea name={props.name} rows={props.rows ?? 6} defaultValue={props.value} required={props.required} placeholder={props.placeholder} spellcheck={false} />
    </label>
  );
}

export function Select(props: { label: string; name: string; options: string[] }) {
  return (
    <label>
      <span>{props.label}</span>
      <select name={props.name}>
        {props.options.map((option) => (
          <option value={option}>{option}</option>
        ))}
      </select>
    </label>
  );
}

export function Checkbox(props: { label: string; name: string; checked?: boolean }) {
  return (
    <label class="check">
      <input type="checkbox" name={props.name} value="true" defaultChecked={props.checked} />
      <span>{props.label}</span>
    </label>
  );
}

/** An answer shown as formatted JSON, labelled for what it is. */
export function JsonView(props: { label: string; value: unknown }) {
  return (
    <pre class="json" aria-label={props.label} tabIndex={0}>
      {JSON.stringify(props.value, null, 2)}
    </pre>
  );
}

export function Section(props: { title: string; children: ComponentChildren }) {
  return (
    <section aria-label={props.title}>
      <h2>{props.title}</h2>
      {props.children}
    </section>
  );
}

/** Splits a text of lines (PGP keys, statements) into its non-empty lines. */
export function lines(text: string | undefined): string[] {
  return (text ?? '')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

/** A comma-separated field as a list. */
export function commaList(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** A button on each item of an ItemList; `label` names it for the item ("Delete role app"). */
export interface ItemAction {
  text: string;
  label: (item: string) => string;
  run: (item: string) => void;
}

/** A labelled list of names, each a link (`link`) or plain text, with buttons acting on it. */
export function ItemList(props: { label: string; items?: string[]; link?: (item: string) => string; actions?: ItemAction[] }) {
  return (
    <ul aria-label={props.label}>
      {(props.items ?? []).map((item) => (
        <li>
          {props.link ? <Link to={props.link(item)}>{item}</Link> : item}
          {(props.actions ?? []).map((action) => (
            <button type="button" class="inline" onClick={() => action.run(item)} aria-label={action.label(item)}>
              {action.text}
            </button>
          ))}
        </li>
      ))}
    </ul>
  );
}
