import { call, type SealStatus, type Session } from '../api';
import { Checkbox, ErrorMessage, Field, Form, JsonView, lines, Section, TextArea, useAction } from '../components';

/**
 * Initialization: Shamir shares (or, with an auto-unseal seal, recovery keys), each optionally
 * encrypted to a PGP key, and the root token optionally encrypted too. The keys are shown once.
 */
export function InitScreen(props: { status: SealStatus; onDone: () => void }) {
  const init = useAction(async (values: Record<string, string>) => {
    const body: Record<string, unknown> = {};
    const count = (name: string) => (values[name] ? Number(values[name]) : undefined);
    if (props.status.recovery_seal) {
      body.recovery_shares = count('shares');
      body.recovery_threshold = count('threshold');
      if (values.pgp_keys) body.recovery_pgp_keys = lines(values.pgp_keys);
    } else {
      body.secret_shares = count('shares');
      body.secret_threshold = count('threshold');
      if (values.pgp_keys) body.pgp_keys = lines(values.pgp_keys);
    }
    if (values.root_token_pgp_key) body.root_token_pgp_key = values.root_token_pgp_key.trim();
    return call('PUT', 'sys/init', { body });
  });
  const keyKind = props.status.recovery_seal ? 'recovery key' : 'key';
  if (init.result) {
    const answer = init.result;
    const keys = (answer.recovery_keys_base64 as string[] | undefined)?.length ? answer.recovery_keys_base64 : answer.keys_base64;
    return (
      <Section title="Initialized">
        <p>Store these {keyKind}s and the root token now: they are not shown again.</p>
        <JsonView label={`${keyKind}s`} value={keys} />
        <JsonView label="root token" value={answer.root_token} />
        <button type="button" onClick={props.onDone}>
          Continue
        </button>
      </Section>
    );
  }
  return (
    <Section title="Initialize">
      <p>
        The server holds no data yet. Choose how many {keyKind}s to make and how many of them {props.status.recovery_seal ? 'authorize root operations' : 'unseal it'}.
      </p>
      <Form label="Initialize" submit="Initialize" onSubmit={(v) => void init.run(v)} busy={init.busy} error={init.error}>
        <Field label={`Number of ${keyKind}s`} name="shares" type="number" value="5" required />
        <Field label={`Threshold: ${keyKind}s needed`} name="threshold" type="number" value="3" required />
        <TextArea label={`PGP public keys for the ${keyKind}s (base64, one per line, optional)`} name="pgp_keys" rows={4} />
        <TextArea label="PGP public key for the root token (base64, optional)" name="root_token_pgp_key" rows={3} />
      </Form>
    </Section>
  );
}

/** Unsealing with key shares, one at a time; progress is the server's. */
export function UnsealScreen(props: { status: SealStatus; onChange: () => void }) {
  const unseal = useAction(async (values: Record<string, string>) => {
    const body = values.reset === 'true' ? { reset: true } : { key: values.key.trim() };
    await call('PUT', 'sys/unseal', { body });
    props.onChange();
  });
  return (
    <Section title="Unseal">
      <p>
        The server is sealed. Enter unseal keys: {props.status.progress} of {props.status.t} given.
      </p>
      <Form label="Unseal" submit="Unseal" onSubmit={(v) => void unseal.run(v)} busy={unseal.busy} error={unseal.error}>
        <Field label="Unseal key" name="key" type="password" />
        <Checkbox label="Discard the keys given so far" name="reset" />
      </Form>
    </Section>
  );
}

/** Sealing and stepping down (Settings). */
export function SealControls(props: { session: Session; onSealed: () => void }) {
  const seal = useAction(async () => {
    await call('PUT', 'sys/seal', { session: props.session });
    props.onSealed();
  });
  const stepDown = useAction(async () => {
    await call('PUT', 'sys/step-down', { session: props.session });
    return 'This node stepped down.';
  });
  return (
    <Section title="Seal">
      <p>Sealing drops the keys from memory on every node of the cluster: nothing is served until it is unsealed again.</p>
      <button type="button" onClick={() => void seal.run()} disabled={seal.busy}>
        Seal the server
      </button>
      <ErrorMessage error={seal.error} />
      <p>Stepping down hands this node's active duties to another node.</p>
      <button type="button" onClick={() => void stepDown.run()} disabled={stepDown.busy}>
        Step down
      </button>
      {stepDown.result && <p role="status">{stepDown.result}</p>}
      <ErrorMessage error={stepDown.error} />
    </Section>
  );
}
