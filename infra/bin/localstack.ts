// `node --import tsx infra/bin/localstack.ts deploy|destroy ENV` (what `bash scripts/localstack.sh deploy|destroy
// ENV` runs): environment ENV's bucket, queues, dead-letter queues and upload notifications on LocalStack, deployed
// through its CloudFormation from the synthesized CDK app. Prints the resources as JSON.
import { clientOptions } from '#shared/operator/environment';
import { deployLocalStackEnvironment, destroyLocalStackEnvironment } from '../lib/localstack-stack.ts';

const USAGE = 'usage: localstack.ts deploy|destroy ENV   (with AWS_ENDPOINT_URL pointing at LocalStack)\n';

async function main([command, env]: string[]): Promise<void> {
  if (!env || (command !== 'deploy' && command !== 'destroy')) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const client = clientOptions();
  if (command === 'destroy') {
    await destroyLocalStackEnvironment(env, client);
    process.stdout.write(`deleted stack toolrl-${env}-localstack\n`);
    return;
  }
  const resources = await deployLocalStackEnvironment({ env, client });
  process.stdout.write(`${JSON.stringify(resources, null, 2)}\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`localstack: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
