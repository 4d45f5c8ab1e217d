/**
 * The S3 emulator refuses what S3 refuses before s3rver sees the request: an unknown access key,
 * a wrong secret, a signature for another region; signed requests reach s3rver whole.
 */
import { CreateBucketCommand, GetObjectCommand, ListBucketsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startS3Emulator, type S3Emulator } from './s3';

describe('S3 emulator: SigV4 in front of s3rver', () => {
  let s3: S3Emulator;
  let keys: { accessKeyId: string; secretAccessKey: string };
  const clients: S3Client[] = [];
  const client = (credentials = keys, region = s3.region) => {
    const made = new S3Client({ region, endpoint: s3.url, forcePathStyle: true, credentials, maxAttempts: 1, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    s3 = await startS3Emulator('eu-west-2');
    keys = s3.createCredentials();
  });
  afterAll(async () => {
    for (const made of clients) made.destroy();
    await s3.close();
  });

  test('a signed upload is stored byte for byte', async () => {
    await client().send(new CreateBucketCommand({ Bucket: 'snapshots' }));
    const data = Buffer.from('snapshot bytes '.repeat(100));
    await client().send(new PutObjectCommand({ Bucket: 'snapshots', Key: 'k', Body: data }));
    const got = await client().send(new GetObjectCommand({ Bucket: 'snapshots', Key: 'k' }));
    expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(data);
  });

  test.each<[string, () => S3Client, string]>([
    ['an unknown access key', () => client({ accessKeyId: 'AKIAUNKNOWN', secretAccessKey: keys.secretAccessKey }), 'InvalidAccessKeyId'],
    ['a wrong secret', () => client({ accessKeyId: keys.accessKeyId, secretAccessKey: 'wrong' }), 'SignatureDoesNotMatch'],
    ['another region', () => client(keys, 'us-east-1'), 'AuthorizationHeaderMalformed'],
  ])('%s is refused', async (_, make, code) => {
    await expect(make().send(new ListBucketsCommand({}))).rejects.toMatchObject({ name: code });
  });
});
