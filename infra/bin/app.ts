// `npx cdk synth|deploy -c env=dev`: the CDK app of one environment (settings in cdk.json context).

import { App } from 'aws-cdk-lib';
import { assertEnvName } from '#shared/deployment/names';
import { addEnvironment } from '../lib/toolrl-app.ts';

const app = new App();
const envName = app.node.tryGetContext('env');
if (typeof envName !== 'string')
  throw new Error('choose an environment: npx cdk synth -c env=dev (environments are defined in cdk.json)');
addEnvironment(app, assertEnvName(envName));
app.synth();
