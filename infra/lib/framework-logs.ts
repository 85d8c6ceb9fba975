// CDK adds Lambda functions of its own to a stack (the S3-notifications handler, the VPC default-security-group
// restrictor). Left alone, each logs to a group Lambda creates on first run and keeps forever; this gives each
// an explicit log group with the environment's retention, named in the function's LoggingConfig.
import { CfnResource, RemovalPolicy, type Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';

/** Gives every Lambda function of `stack` that names no log group one with `retention`; returns how many. */
export function retainFrameworkFunctionLogs(stack: Stack, retention: logs.RetentionDays): number {
  let given = 0;
  for (const node of stack.node.findAll()) {
    if (!(node instanceof CfnResource) || node.cfnResourceType !== 'AWS::Lambda::Function') continue;
    // Our functions (ToolrlFunction) pass their own log group; CDK's custom-resource providers are plain
    // CfnResources that never set LoggingConfig.
    if (node instanceof lambda.CfnFunction && node.loggingConfig !== undefined) continue;
    const scope = node.node.scope;
    if (!scope) continue;
    const group = new logs.LogGroup(scope, `${node.node.id}Logs`, {
      retention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // The basic-execution policy these helpers' roles carry already allows writing to any log group.
    node.addPropertyOverride('LoggingConfig.LogGroup', group.logGroupName);
    given++;
  }
  return given;
}
