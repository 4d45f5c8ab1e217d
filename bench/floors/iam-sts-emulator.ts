import { startIamStsEmulator } from '../../test/emulators/aws/iam-sts';

/**
 * The IAM + STS emulator (test/emulators/aws) in its own process, as the provider both the server
 * and its floor call in the cloud-credential scenarios: neither the load generator nor what is
 * measured hosts it. Prints `{"port", "accessKeyId", "secretAccessKey", "roleArn", "policyArn"}`:
 * a root user's key, a role to assume and a managed policy to attach.
 */
void startIamStsEmulator({ recordCalls: false }).then((emulator) => {
  emulator.state.createUser('bench-root');
  const key = emulator.state.createAccessKey('bench-root');
  const role = emulator.state.createRole('bench-role');
  const policyArn = emulator.state.createPolicy('arn:aws:iam::aws:policy/ReadOnlyAccess');
  process.stdout.write(`${JSON.stringify({ port: Number(new URL(emulator.url).port), accessKeyId: key.id, secretAccessKey: key.secret, roleArn: role.arn, policyArn })}\n`);
  process.on('SIGTERM', () => void emulator.close().then(() => process.exit(0)));
});
