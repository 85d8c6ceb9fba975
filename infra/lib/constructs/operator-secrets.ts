// Secrets whose values the operator puts after the first deploy (tool API keys, the W&B key). The stack
// creates them empty so the functions and the learner can be granted read access by ARN.

import { RemovalPolicy, SecretValue, Validations } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { secretName } from '#shared/deployment/names';

export class OperatorSecrets extends Construct {
  /** JSON object of tool name -> API key, read by the tool-call stage (never handed to the code sandbox). */
  readonly toolApiKeys: secretsmanager.Secret;
  /** `{"WANDB_API_KEY": "..."}`, injected into the learner's container when logging.wandb is set. */
  readonly wandb: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: { envName: string }) {
    super(scope, id);
    const create = (cid: string, which: 'tool-api-keys' | 'wandb', description: string, initial: object) => {
      const secret = new secretsmanager.Secret(this, cid, {
        secretName: secretName(props.envName, which),
        description,
        // A placeholder with no key in it: the operator replaces it with put-secret-value, and a later
        // deploy leaves that value alone because this template value never changes.
        secretStringValue: SecretValue.unsafePlainText(JSON.stringify(initial)),
        removalPolicy: RemovalPolicy.RETAIN,
      });
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          'Third-party API keys (tool providers, W&B) cannot be rotated by a Lambda; the operator rotates them.',
      });
      return secret;
    };
    this.toolApiKeys = create(
      'ToolApiKeys',
      'tool-api-keys',
      'toolrl: API keys of the tools, {"<ENV_NAME>": "<key>"}',
      {},
    );
    // The field must exist: ECS refuses to start a container whose secret lacks the JSON key it injects.
    this.wandb = create('Wandb', 'wandb', 'toolrl: Weights & Biases key for the learner', {
      WANDB_API_KEY: '',
    });
  }
}
